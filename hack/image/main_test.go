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
