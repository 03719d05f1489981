// Command image builds an OCI image layout tarball holding the static
// sidebench-agent binary, with no registry and no docker:
//
//	go run ./hack/image -o out.tar -name example.local/sidebench-agent:v1 [-name ...]
//	    [-pause-name example.local/sidebench-pause:v1 ...] [-bin PATH] [-arch amd64]
//
// The tarball has one uncompressed layer (the binary at /sidebench-agent,
// plus /tmp and the /sidebench log mount point), a config whose Entrypoint
// is the agent, a manifest, index.json with one entry per -name carrying
// the io.containerd.image.name annotation, and oci-layout. Each
// -pause-name adds an entry for a second manifest over the same layer
// whose config runs `/sidebench-agent pause` (block until SIGTERM): the
// pod sandbox image of the local containerd tier, so that a node needs
// nothing from a registry. Load it with
//
//	ctr -n k8s.io images import out.tar     (containerd; the kubelet's namespace)
//	kind load image-archive out.tar         (kind)
//
// Use a tagged (non-latest) name so that the default IfNotPresent pull
// policy never asks a registry. Without -bin, the agent is built from
// ./cmd/sidebench-agent with CGO_ENABLED=0 for linux/-arch.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "sidebench-agent.tar", "output OCI layout tarball")
	bin := fs.String("bin", "", "prebuilt static agent binary (default: build ./cmd/sidebench-agent)")
	arch := fs.String("arch", runtime.GOARCH, "GOARCH of the image")
	var names, pauseNames []string
	seen := map[string]bool{}
	nameFlag := func(list *[]string) func(string) error {
		return func(s string) error {
			if err := checkName(s); err != nil {
				return err
			}
			if seen[s] {
				return fmt.Errorf("image name %q given twice", s)
			}
			seen[s] = true
			*list = append(*list, s)
			return nil
		}
	}
	fs.Func("name", "image name with a tag, e.g. example.local/sidebench-agent:v1 (repeatable)", nameFlag(&names))
	fs.Func("pause-name", "name of a pod sandbox (pause) image over the same layer, entrypoint `/sidebench-agent pause`, e.g. example.local/sidebench-pause:v1 (repeatable)", nameFlag(&pauseNames))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("give at least one -name, e.g. -name example.local/sidebench-agent:v1")
	}
	path := *bin
	if path == "" {
		dir, err := os.MkdirTemp("", "sidebench-image-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "sidebench-agent")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", path, "github.com/sidebench/sidebench/cmd/sidebench-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+*arch)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building the agent: %w", err)
		}
	}
	agent, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := Build(&buf, agent, Options{Names: names, PauseNames: pauseNames, Arch: *arch}); err != nil {
		return err
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%d bytes) with %s\n", *out, buf.Len(), strings.Join(append(names, pauseNames...), ", "))
	return nil
}

// checkName requires repository:tag (a tag, and not latest).
func checkName(s string) error {
	slash := strings.LastIndex(s, "/")
	colon := strings.LastIndex(s, ":")
	if colon <= slash || colon == len(s)-1 {
		return fmt.Errorf("image name %q has no tag (e.g. example.local/sidebench-agent:v1)", s)
	}
	if s[colon+1:] == "latest" {
		return fmt.Errorf("image name %q: use a tag other than latest, or the kubelet's default pull policy (Always for latest) asks a registry", s)
	}
	return nil
}

// OCI media types and the annotations the tools read.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
	// AnnotationContainerdName is the full image name `ctr images import`
	// gives the image.
	AnnotationContainerdName = "io.containerd.image.name"
	// AnnotationRefName is the OCI reference (the tag).
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AgentPath is the agent's path in the image, and the entrypoint.
	AgentPath = "/sidebench-agent"
	// PauseCommand is the agent's subcommand the pause image runs.
	PauseCommand = "pause"
)

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Index is index.json.
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// Manifest is an image manifest.
type Manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        Descriptor   `json:"config"`
	Layers        []Descriptor `json:"layers"`
}

// Config is the image configuration (the fields sidebench sets).
type Config struct {
	Created      string      `json:"created"`
	Architecture string      `json:"architecture"`
	OS           string      `json:"os"`
	Config       ImageConfig `json:"config"`
	RootFS       RootFS      `json:"rootfs"`
	History      []History   `json:"history"`
}

type ImageConfig struct {
	Entrypoint []string `json:"Entrypoint"`
	Env        []string `json:"Env"`
	WorkingDir string   `json:"WorkingDir"`
}

type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type History struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// Options says what to put in the image.
type Options struct {
	// Names are the agent image's names (entrypoint the agent).
	Names []string
	// PauseNames are the sandbox image's names (entrypoint
	// `/sidebench-agent pause`, same layer).
	PauseNames []string
	Arch       string
}

// epoch is every timestamp in the image, so the same binary gives the same
// digests.
var epoch = time.Unix(0, 0).UTC()

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Layer returns the layer tar: /sidebench-agent (0755), /tmp (1777) and the
// /sidebench directory (the shared log's mount point).
func Layer(agent []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdrs := []*tar.Header{
		{Name: "sidebench/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: strings.TrimPrefix(AgentPath, "/"), Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(agent))},
	}
	for _, h := range hdrs {
		h.ModTime, h.Format = epoch, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(agent); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Build writes the OCI image layout tarball of agent to w.
func Build(w io.Writer, agent []byte, o Options) error {
	if len(o.Names) == 0 {
		return errors.New("no image name")
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	layer, err := Layer(agent)
	if err != nil {
		return err
	}
	created := epoch.Format(time.RFC3339)
	// image returns the config and manifest of an image of the layer
	// whose entrypoint is entrypoint.
	image := func(entrypoint []string, createdBy string) (cfg, man []byte, err error) {
		cfg, err = json.Marshal(Config{
			Created: created, Architecture: o.Arch, OS: "linux",
			Config:  ImageConfig{Entrypoint: entrypoint, Env: []string{"PATH=/"}, WorkingDir: "/"},
			RootFS:  RootFS{Type: "layers", DiffIDs: []string{digest(layer)}}, // uncompressed: diff ID = layer digest
			History: []History{{Created: created, CreatedBy: createdBy}},
		})
		if err != nil {
			return nil, nil, err
		}
		man, err = json.Marshal(Manifest{
			SchemaVersion: 2, MediaType: MediaTypeManifest,
			Config: Descriptor{MediaType: MediaTypeConfig, Digest: digest(cfg), Size: int64(len(cfg))},
			Layers: []Descriptor{{MediaType: MediaTypeLayer, Digest: digest(layer), Size: int64(len(layer))}},
		})
		return cfg, man, err
	}
	cfg, man, err := image([]string{AgentPath}, "sidebench hack/image: static sidebench-agent")
	if err != nil {
		return err
	}
	// The pause image's blobs are written only when it is named, so a
	// tarball without -pause-name is byte for byte what it was before.
	var pauseCfg, pauseMan []byte
	if len(o.PauseNames) > 0 {
		if pauseCfg, pauseMan, err = image([]string{AgentPath, PauseCommand}, "sidebench hack/image: sidebench-agent pause (pod sandbox)"); err != nil {
			return err
		}
	}
	idx := Index{SchemaVersion: 2, MediaType: MediaTypeIndex}
	entry := func(m []byte, n string) Descriptor {
		return Descriptor{
			MediaType: MediaTypeManifest, Digest: digest(m), Size: int64(len(m)),
			Annotations: map[string]string{AnnotationContainerdName: n, AnnotationRefName: n[strings.LastIndex(n, ":")+1:]},
		}
	}
	for _, n := range o.Names {
		idx.Manifests = append(idx.Manifests, entry(man, n))
	}
	for _, n := range o.PauseNames {
		idx.Manifests = append(idx.Manifests, entry(pauseMan, n))
	}
	index, err := json.Marshal(idx)
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	file := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
	}
	blob := func(b []byte) error { return file("blobs/sha256/"+strings.TrimPrefix(digest(b), "sha256:"), b) }
	steps := []func() error{
		func() error { return file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)) },
		func() error { return file("index.json", index) },
		func() error { return dir("blobs/") },
		func() error { return dir("blobs/sha256/") },
		func() error { return blob(layer) },
		func() error { return blob(cfg) },
		func() error { return blob(man) },
	}
	if len(o.PauseNames) > 0 {
		steps = append(steps, func() error { return blob(pauseCfg) }, func() error { return blob(pauseMan) })
	}
	steps = append(steps, tw.Close)
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}
