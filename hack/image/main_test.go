package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readTar returns the regular files of a tar by name, and the order of
// every entry.
func readTar(t *testing.T, b []byte) (map[string][]byte, map[string]*tar.Header, []string) {
	t.Helper()
	files, hdrs := map[string][]byte{}, map[string]*tar.Header{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, h.Name)
		hdrs[h.Name] = h
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = data
		}
	}
	return files, hdrs, order
}

func blobOf(t *testing.T, files map[string][]byte, d Descriptor) []byte {
	t.Helper()
	name := "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:")
	b, ok := files[name]
	if !ok {
		t.Fatalf("no blob %s", name)
	}
	if digest(b) != d.Digest {
		t.Errorf("blob %s has digest %s", name, digest(b))
	}
	if int64(len(b)) != d.Size {
		t.Errorf("blob %s: size %d, descriptor says %d", name, len(b), d.Size)
	}
	return b
}

func TestBuildLayout(t *testing.T) {
	agent := []byte("\x7fELF not really an agent")
	names := []string{"example.local/sidebench-agent:v1", "example.local/pause:v1"}
	var buf bytes.Buffer
	if err := Build(&buf, agent, Options{Names: names, Arch: "arm64"}); err != nil {
		t.Fatal(err)
	}
	files, _, _ := readTar(t, buf.Bytes())
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", got)
	}
	var idx Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if idx.SchemaVersion != 2 || idx.MediaType != MediaTypeIndex || len(idx.Manifests) != len(names) {
		t.Fatalf("index = %+v", idx)
	}
	for i, d := range idx.Manifests {
		if d.MediaType != MediaTypeManifest || d.Annotations[AnnotationContainerdName] != names[i] || d.Annotations[AnnotationRefName] != "v1" {
			t.Errorf("index entry %d = %+v", i, d)
		}
	}
	var man Manifest
	if err := json.Unmarshal(blobOf(t, files, idx.Manifests[0]), &man); err != nil {
		t.Fatal(err)
	}
	if man.SchemaVersion != 2 || man.MediaType != MediaTypeManifest || man.Config.MediaType != MediaTypeConfig ||
		len(man.Layers) != 1 || man.Layers[0].MediaType != MediaTypeLayer {
		t.Fatalf("manifest = %+v", man)
	}
	var cfg Config
	if err := json.Unmarshal(blobOf(t, files, man.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != AgentPath {
		t.Errorf("config = %+v", cfg)
	}
	layer := blobOf(t, files, man.Layers[0])
	if cfg.RootFS.Type != "layers" || len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != man.Layers[0].Digest {
		t.Errorf("rootfs = %+v, want the uncompressed layer's digest %s", cfg.RootFS, man.Layers[0].Digest)
	}
	lf, lh, _ := readTar(t, layer)
	if !bytes.Equal(lf["sidebench-agent"], agent) {
		t.Errorf("layer has no agent binary: %v", lf)
	}
	if h := lh["sidebench-agent"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("agent is not executable: %+v", h)
	}
	if h := lh["tmp/"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o1777 != 0o1777 {
		t.Errorf("layer /tmp = %+v, want a 1777 directory", h)
	}

	// Reproducible: the same binary gives the same bytes.
	var again bytes.Buffer
	_ = Build(&again, agent, Options{Names: names, Arch: "arm64"})
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two builds of the same binary differ")
	}
}

func TestRunWithPrebuiltBinary(t *testing.T) {
	dir := t.TempDir()
	bin, out := filepath.Join(dir, "agent"), filepath.Join(dir, "img.tar")
	if err := os.WriteFile(bin, []byte("agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if err := run([]string{"-o", out, "-bin", bin, "-name", "example.local/sidebench-agent:v1"}, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	files, _, order := readTar(t, b)
	if order[0] != "oci-layout" || files["index.json"] == nil {
		t.Errorf("entries %v", order)
	}
	for _, bad := range []string{"example.local/sidebench-agent", "example.local/sidebench-agent:latest", "localhost:5000/agent"} {
		if err := run([]string{"-o", out, "-bin", bin, "-name", bad}, &stderr); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if err := run([]string{"-o", out, "-bin", bin}, &stderr); err == nil {
		t.Error("no -name accepted")
	}
}

// TestPauseImage: -pause-name entries point at a second manifest over the
// same layer whose entrypoint is `/sidebench-agent pause`, the agent
// entries are unchanged, and the tarball stays reproducible.
func TestPauseImage(t *testing.T) {
	agent := []byte("\x7fELF not really an agent")
	o := Options{Names: []string{"example.local/sidebench-agent:v1"}, PauseNames: []string{"example.local/sidebench-pause:v1"}, Arch: "amd64"}
	var buf bytes.Buffer
	if err := Build(&buf, agent, o); err != nil {
		t.Fatal(err)
	}
	files, _, _ := readTar(t, buf.Bytes())
	var idx Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 2 {
		t.Fatalf("index has %d entries, want 2: %+v", len(idx.Manifests), idx)
	}
	agentEntry, pauseEntry := idx.Manifests[0], idx.Manifests[1]
	if pauseEntry.Annotations[AnnotationContainerdName] != "example.local/sidebench-pause:v1" || pauseEntry.Annotations[AnnotationRefName] != "v1" {
		t.Errorf("pause entry annotations %v", pauseEntry.Annotations)
	}
	if pauseEntry.Digest == agentEntry.Digest {
		t.Fatal("pause entry points at the agent manifest")
	}
	var agentMan, pauseMan Manifest
	if err := json.Unmarshal(blobOf(t, files, agentEntry), &agentMan); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(blobOf(t, files, pauseEntry), &pauseMan); err != nil {
		t.Fatal(err)
	}
	if len(pauseMan.Layers) != 1 || pauseMan.Layers[0].Digest != agentMan.Layers[0].Digest {
		t.Errorf("pause layers %+v, want the agent's %+v", pauseMan.Layers, agentMan.Layers)
	}
	var agentCfg, pauseCfg Config
	if err := json.Unmarshal(blobOf(t, files, agentMan.Config), &agentCfg); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(blobOf(t, files, pauseMan.Config), &pauseCfg); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pauseCfg.Config.Entrypoint, " "); got != "/sidebench-agent pause" {
		t.Errorf("pause entrypoint %q", got)
	}
	if got := strings.Join(agentCfg.Config.Entrypoint, " "); got != AgentPath {
		t.Errorf("agent entrypoint %q", got)
	}
	if len(pauseCfg.RootFS.DiffIDs) != 1 || pauseCfg.RootFS.DiffIDs[0] != agentMan.Layers[0].Digest {
		t.Errorf("pause rootfs %+v", pauseCfg.RootFS)
	}
	// 2 dirs + layer + 2 configs + 2 manifests + oci-layout + index.json.
	if n := len(files); n != 7 {
		t.Errorf("%d regular files, want 7", n)
	}
	var again bytes.Buffer
	_ = Build(&again, agent, o)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two builds of the same binary differ")
	}

	// Through the command line, and a name given twice is refused.
	dir := t.TempDir()
	bin, out := filepath.Join(dir, "agent"), filepath.Join(dir, "img.tar")
	if err := os.WriteFile(bin, agent, 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if err := run([]string{"-o", out, "-bin", bin, "-arch", "amd64", "-name", o.Names[0], "-pause-name", o.PauseNames[0]}, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, buf.Bytes()) {
		t.Error("run -pause-name wrote other bytes than Build")
	}
	if err := run([]string{"-o", out, "-bin", bin, "-name", "example.local/x:v1", "-pause-name", "example.local/x:v1"}, &stderr); err == nil {
		t.Error("the same name as agent and pause image accepted")
	}
	if err := run([]string{"-o", out, "-bin", bin, "-name", "example.local/x:v1", "-pause-name", "example.local/pause"}, &stderr); err == nil {
		t.Error("untagged pause name accepted")
	}
}
