// Command image builds an OCI image layout tarball holding a static
// sidebench binary, with no registry and no docker, and can push it:
//
//	go run ./hack/image -o out.tar -name example.local/sidebench-agent:v1 [-name ...]
//	    [-pause-name example.local/sidebench-pause:v1 ...] [-bin PATH] [-arch amd64]
//	go run ./hack/image -cmd sidebench -o bin/sidebench.tar -name example.local/sidebench:v1
//	    [-arch amd64,arm64] [-push registry.example.com/sidebench:v1 [-insecure]]
//
// -cmd sidebench builds the sidebench image: the sidebench binary at
// /sidebench (the entrypoint), every scenarios/*.yaml at /scenarios, run
// as the non-root user 65532 in /work (writable). Several -arch values
// give a multi-arch image: index.json names an image index of one
// manifest per platform. -push copies the image (or index) to a registry
// with go-containerregistry, credentials from the docker config
// (~/.docker/config.json, credential helpers); -insecure allows plain
// HTTP (a registry on localhost).
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
	"slices"
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
	bin := fs.String("bin", "", "prebuilt static binary (default: build ./cmd/CMD; one -arch only)")
	arch := fs.String("arch", runtime.GOARCH, "GOARCH of the image; a comma-separated list builds a multi-arch image")
	cmdName := fs.String("cmd", "sidebench-agent", "binary of the image: sidebench-agent (the containers' agent) or sidebench (the CLI, for running sidebench in a cluster)")
	scenarioDir := fs.String("scenarios", "scenarios", "-cmd sidebench: directory whose *.yaml are copied to /scenarios")
	push := fs.String("push", "", "push the image to this reference (e.g. registry.example.com/sidebench:v1)")
	insecure := fs.Bool("insecure", false, "-push over plain HTTP (a local registry)")
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
	archs := strings.Split(*arch, ",")
	o := Options{Names: names, PauseNames: pauseNames, Arch: archs[0]}
	switch *cmdName {
	case "sidebench-agent":
	case "sidebench":
		if len(pauseNames) > 0 {
			return errors.New("-pause-name: the pause image is the agent's (-cmd sidebench-agent)")
		}
		files, err := scenarioFiles(*scenarioDir)
		if err != nil {
			return err
		}
		o.Cmd, o.Files, o.User, o.WorkDir = SidebenchPath, files, NonRootUser, WorkDir
	default:
		return fmt.Errorf("-cmd %q: allowed: sidebench-agent, sidebench", *cmdName)
	}
	if len(archs) > 1 && (*bin != "" || len(pauseNames) > 0) {
		return errors.New("several -arch values: the binaries are built here (no -bin) and there is no pause image")
	}
	bins := map[string][]byte{}
	for _, a := range archs {
		path := *bin
		if path == "" {
			dir, err := os.MkdirTemp("", "sidebench-image-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			path = filepath.Join(dir, *cmdName)
			cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=auto", "-ldflags", "-s -w", "-o", path, "github.com/sidebench/sidebench/cmd/"+*cmdName)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+a)
			cmd.Stdout, cmd.Stderr = stderr, stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("building %s for %s: %w", *cmdName, a, err)
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		bins[a] = b
	}
	var buf bytes.Buffer
	var err error
	if len(archs) == 1 {
		err = Build(&buf, bins[archs[0]], o)
	} else {
		err = BuildMulti(&buf, bins, o)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%d bytes, %s) with %s\n", *out, buf.Len(), strings.Join(archs, ","), strings.Join(append(names, pauseNames...), ", "))
	if *push != "" {
		d, err := Push(buf.Bytes(), names[0], *push, *insecure)
		if err != nil {
			return fmt.Errorf("-push %s: %w", *push, err)
		}
		fmt.Fprintf(stderr, "pushed %s as %s@%s\n", names[0], *push, d)
	}
	return nil
}

// scenarioFiles reads dir/*.yaml for /scenarios.
func scenarioFiles(dir string) ([]File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("-scenarios %s: no *.yaml files (%v)", dir, err)
	}
	var out []File
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: "scenarios/" + filepath.Base(p), Mode: 0o644, Data: b})
	}
	return out, nil
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
	// SidebenchPath is the CLI's path in the sidebench image.
	SidebenchPath = "/sidebench"
	// NonRootUser is the sidebench image's user (uid:gid, as distroless'
	// nonroot): a pod's securityContext may require runAsNonRoot.
	NonRootUser = "65532:65532"
	// WorkDir is the sidebench image's working directory, writable by
	// NonRootUser (a run directory goes to a mounted volume anyway).
	WorkDir = "/work"
	// MediaTypeOCIIndex is an image index's media type (multi-arch).
	MediaTypeOCIIndex = "application/vnd.oci.image.index.v1+json"
)

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *Platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Platform is a manifest's platform in an image index.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
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
	User       string   `json:"User,omitempty"`
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
	// Cmd is the binary's path in the image and the entrypoint (default
	// AgentPath).
	Cmd string
	// Files are more files of the layer (the sidebench image's scenarios).
	Files []File
	// User is the config's user ("" runs as root, as the agent does:
	// it must read the pod's shared log).
	User string
	// WorkDir is created in the layer, owned by User, and is the working
	// directory (default /).
	WorkDir string
}

// File is a regular file of the layer.
type File struct {
	Path string // relative, e.g. scenarios/tiny.yaml
	Mode int64
	Data []byte
}

// epoch is every timestamp in the image, so the same binary gives the same
// digests.
var epoch = time.Unix(0, 0).UTC()

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Layer returns the agent image's layer tar: /sidebench-agent (0755),
// /tmp (1777) and the /sidebench directory (the shared log's mount point).
func Layer(agent []byte) ([]byte, error) { return layer(agent, Options{}) }

// layer returns the layer of o's image: the binary at o.Cmd, /tmp, the
// agent's /sidebench log directory or the CLI's working directory, and
// o.Files.
func layer(bin []byte, o Options) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	cmd := o.Cmd
	if cmd == "" {
		cmd = AgentPath
	}
	var hdrs []*tar.Header
	if cmd == AgentPath {
		hdrs = append(hdrs, &tar.Header{Name: "sidebench/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	hdrs = append(hdrs, &tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
	if o.WorkDir != "" {
		uid, gid := owner(o.User)
		hdrs = append(hdrs, &tar.Header{Name: strings.TrimPrefix(o.WorkDir, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: uid, Gid: gid})
	}
	hdrs = append(hdrs, &tar.Header{Name: strings.TrimPrefix(cmd, "/"), Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))})
	data := map[string][]byte{strings.TrimPrefix(cmd, "/"): bin}
	dirs := map[string]bool{}
	for _, f := range o.Files {
		if d := filepath.Dir(f.Path); d != "." && !dirs[d] {
			dirs[d] = true
			hdrs = append(hdrs, &tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		}
		hdrs = append(hdrs, &tar.Header{Name: f.Path, Typeflag: tar.TypeReg, Mode: f.Mode, Size: int64(len(f.Data))})
		data[f.Path] = f.Data
	}
	for _, h := range hdrs {
		h.ModTime, h.Format = epoch, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data[h.Name]); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// owner parses "uid:gid".
func owner(user string) (uid, gid int) {
	fmt.Sscanf(user, "%d:%d", &uid, &gid)
	return uid, gid
}

// image is one platform's blobs.
type image struct {
	layer, cfg, man []byte
}

// buildImage returns the layer, config and manifest of an image of bin
// for arch, running entrypoint.
func buildImage(bin []byte, arch string, entrypoint []string, createdBy string, o Options) (image, error) {
	lay, err := layer(bin, o)
	if err != nil {
		return image{}, err
	}
	created := epoch.Format(time.RFC3339)
	wd := o.WorkDir
	if wd == "" {
		wd = "/"
	}
	env := []string{"PATH=/"}
	if o.User != "" {
		env = append(env, "HOME=/tmp")
	}
	cfg, err := json.Marshal(Config{
		Created: created, Architecture: arch, OS: "linux",
		Config:  ImageConfig{User: o.User, Entrypoint: entrypoint, Env: env, WorkingDir: wd},
		RootFS:  RootFS{Type: "layers", DiffIDs: []string{digest(lay)}}, // uncompressed: diff ID = layer digest
		History: []History{{Created: created, CreatedBy: createdBy}},
	})
	if err != nil {
		return image{}, err
	}
	man, err := json.Marshal(Manifest{
		SchemaVersion: 2, MediaType: MediaTypeManifest,
		Config: Descriptor{MediaType: MediaTypeConfig, Digest: digest(cfg), Size: int64(len(cfg))},
		Layers: []Descriptor{{MediaType: MediaTypeLayer, Digest: digest(lay), Size: int64(len(lay))}},
	})
	return image{lay, cfg, man}, err
}

// entry is index.json's descriptor of blob b (a manifest or an index)
// named n.
func entry(mediaType string, b []byte, n string) Descriptor {
	return Descriptor{
		MediaType: mediaType, Digest: digest(b), Size: int64(len(b)),
		Annotations: map[string]string{AnnotationContainerdName: n, AnnotationRefName: n[strings.LastIndex(n, ":")+1:]},
	}
}

// Build writes the OCI image layout tarball of bin (the agent, or o.Cmd)
// to w.
func Build(w io.Writer, bin []byte, o Options) error {
	if len(o.Names) == 0 {
		return errors.New("no image name")
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	cmd, what := o.Cmd, "sidebench hack/image: static sidebench-agent"
	if cmd == "" {
		cmd = AgentPath
	} else {
		what = "sidebench hack/image: static " + strings.TrimPrefix(cmd, "/")
	}
	img, err := buildImage(bin, o.Arch, []string{cmd}, what, o)
	if err != nil {
		return err
	}
	// The pause image's blobs are written only when it is named, so a
	// tarball without -pause-name is byte for byte what it was before.
	var pause image
	if len(o.PauseNames) > 0 {
		if pause, err = buildImage(bin, o.Arch, []string{AgentPath, PauseCommand}, "sidebench hack/image: sidebench-agent pause (pod sandbox)", o); err != nil {
			return err
		}
	}
	idx := Index{SchemaVersion: 2, MediaType: MediaTypeIndex}
	for _, n := range o.Names {
		idx.Manifests = append(idx.Manifests, entry(MediaTypeManifest, img.man, n))
	}
	for _, n := range o.PauseNames {
		idx.Manifests = append(idx.Manifests, entry(MediaTypeManifest, pause.man, n))
	}
	blobs := [][]byte{img.layer, img.cfg, img.man}
	if len(o.PauseNames) > 0 {
		blobs = append(blobs, pause.cfg, pause.man)
	}
	return writeLayout(w, idx, blobs)
}

// BuildMulti writes a multi-arch OCI image layout tarball to w: one image
// per architecture of bins (GOARCH → binary), an image index of them, and
// index.json naming the image index once per o.Names.
func BuildMulti(w io.Writer, bins map[string][]byte, o Options) error {
	if len(o.Names) == 0 {
		return errors.New("no image name")
	}
	archs := make([]string, 0, len(bins))
	for a := range bins {
		archs = append(archs, a)
	}
	slices.Sort(archs)
	cmd := o.Cmd
	if cmd == "" {
		cmd = AgentPath
	}
	var blobs [][]byte
	sub := Index{SchemaVersion: 2, MediaType: MediaTypeOCIIndex}
	for _, a := range archs {
		img, err := buildImage(bins[a], a, []string{cmd}, "sidebench hack/image: static "+strings.TrimPrefix(cmd, "/"), o)
		if err != nil {
			return err
		}
		blobs = append(blobs, img.layer, img.cfg, img.man)
		sub.Manifests = append(sub.Manifests, Descriptor{MediaType: MediaTypeManifest, Digest: digest(img.man), Size: int64(len(img.man)),
			Platform: &Platform{Architecture: a, OS: "linux"}})
	}
	subIdx, err := json.Marshal(sub)
	if err != nil {
		return err
	}
	blobs = append(blobs, subIdx)
	idx := Index{SchemaVersion: 2, MediaType: MediaTypeIndex}
	for _, n := range o.Names {
		idx.Manifests = append(idx.Manifests, entry(MediaTypeOCIIndex, subIdx, n))
	}
	return writeLayout(w, idx, blobs)
}

// writeLayout writes the layout tarball: oci-layout, index.json, blobs.
func writeLayout(w io.Writer, idx Index, blobs [][]byte) error {
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
	steps := []func() error{
		func() error { return file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)) },
		func() error { return file("index.json", index) },
		func() error { return dir("blobs/") },
		func() error { return dir("blobs/sha256/") },
	}
	written := map[string]bool{}
	for _, b := range blobs {
		d := digest(b)
		if written[d] {
			continue
		}
		written[d] = true
		steps = append(steps, func() error { return file("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), b) })
	}
	steps = append(steps, tw.Close)
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}
