package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
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

// TestSidebenchImage: the CLI's image runs /sidebench as the non-root user
// in a /work it owns, with the scenarios at /scenarios.
func TestSidebenchImage(t *testing.T) {
	bin := []byte("\x7fELF not really sidebench")
	files := []File{{Path: "scenarios/a.yaml", Mode: 0o644, Data: []byte("a: 1\n")}, {Path: "scenarios/b.yaml", Mode: 0o644, Data: []byte("b: 2\n")}}
	var buf bytes.Buffer
	if err := Build(&buf, bin, Options{Names: []string{"example.local/sidebench:v1"}, Arch: "amd64", Cmd: SidebenchPath, Files: files, User: NonRootUser, WorkDir: WorkDir}); err != nil {
		t.Fatal(err)
	}
	tfiles, _, _ := readTar(t, buf.Bytes())
	var idx Index
	json.Unmarshal(tfiles["index.json"], &idx)
	var man Manifest
	json.Unmarshal(blobOf(t, tfiles, idx.Manifests[0]), &man)
	var cfg Config
	json.Unmarshal(blobOf(t, tfiles, man.Config), &cfg)
	if cfg.Config.User != NonRootUser || cfg.Config.Entrypoint[0] != SidebenchPath || cfg.Config.WorkingDir != WorkDir {
		t.Errorf("config %+v", cfg.Config)
	}
	lf, lh, _ := readTar(t, blobOf(t, tfiles, man.Layers[0]))
	if string(lf["sidebench"]) != string(bin) || string(lf["scenarios/b.yaml"]) != "b: 2\n" || lh["sidebench"].Mode != 0o755 {
		t.Errorf("layer files %v", keysOf(lf))
	}
	if w := lh["work/"]; w == nil || w.Uid != 65532 || w.Gid != 65532 {
		t.Errorf("work dir %+v", w)
	}
	if _, agent := lf["sidebench-agent"]; agent {
		t.Error("the agent is in the CLI's image")
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBuildMulti: several architectures give index.json → an image index
// of one manifest per platform, each with its own binary.
func TestBuildMulti(t *testing.T) {
	var buf bytes.Buffer
	bins := map[string][]byte{"amd64": []byte("x86 binary"), "arm64": []byte("arm binary")}
	if err := BuildMulti(&buf, bins, Options{Names: []string{"example.local/sidebench:v1"}, Cmd: SidebenchPath, User: NonRootUser, WorkDir: WorkDir}); err != nil {
		t.Fatal(err)
	}
	files, _, _ := readTar(t, buf.Bytes())
	var idx, sub Index
	json.Unmarshal(files["index.json"], &idx)
	if len(idx.Manifests) != 1 || idx.Manifests[0].MediaType != MediaTypeOCIIndex || idx.Manifests[0].Annotations[AnnotationContainerdName] != "example.local/sidebench:v1" {
		t.Fatalf("index.json %+v", idx)
	}
	json.Unmarshal(blobOf(t, files, idx.Manifests[0]), &sub)
	if len(sub.Manifests) != 2 {
		t.Fatalf("image index %+v", sub)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		d := sub.Manifests[i]
		if d.Platform == nil || d.Platform.Architecture != arch || d.Platform.OS != "linux" {
			t.Errorf("manifest %d platform %+v", i, d.Platform)
		}
		var man Manifest
		json.Unmarshal(blobOf(t, files, d), &man)
		lf, _, _ := readTar(t, blobOf(t, files, man.Layers[0]))
		if !bytes.Equal(lf["sidebench"], bins[arch]) {
			t.Errorf("%s image has binary %q", arch, lf["sidebench"])
		}
	}
}

// TestPush: -push copies the image, or the multi-arch index, to a
// registry (an in-process one on 127.0.0.1) with the digests of the
// tarball.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	var single, multi bytes.Buffer
	o := Options{Names: []string{"example.local/sidebench:v1"}, Arch: "amd64", Cmd: SidebenchPath, User: NonRootUser, WorkDir: WorkDir}
	if err := Build(&single, []byte("bin"), o); err != nil {
		t.Fatal(err)
	}
	if err := BuildMulti(&multi, map[string][]byte{"amd64": []byte("a"), "arm64": []byte("b")}, o); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tar  []byte
	}{{"single", single.Bytes()}, {"multi", multi.Bytes()}} {
		ref := host + "/sidebench:" + tc.name
		d, err := Push(tc.tar, "example.local/sidebench:v1", ref, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		files, _, _ := readTar(t, tc.tar)
		var idx Index
		json.Unmarshal(files["index.json"], &idx)
		if d != idx.Manifests[0].Digest {
			t.Errorf("%s: pushed %s, tarball names %s", tc.name, d, idx.Manifests[0].Digest)
		}
		r, _ := name.ParseReference(ref, name.Insecure)
		desc, err := remote.Get(r)
		if err != nil || desc.Digest.String() != d {
			t.Errorf("%s: the registry has %v (%v), want %s", tc.name, desc, err, d)
		}
	}
	if _, err := Push(single.Bytes(), "example.local/other:v1", host+"/x:y", true); err == nil {
		t.Error("pushing a name the tarball lacks succeeded")
	}
}
