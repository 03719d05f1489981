package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push copies the image named n of an OCI layout tarball (Build,
// BuildMulti) to the registry reference ref: the image, or the image
// index of a multi-arch build, byte for byte (the digests do not change).
// Credentials come from the docker config (authn.DefaultKeychain);
// insecure allows plain HTTP. It returns the pushed digest.
func Push(tarball []byte, n, ref string, insecure bool) (string, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "sidebench-push-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := untar(tarball, dir); err != nil {
		return "", err
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return "", err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return "", err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return "", err
	}
	ro := []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	for _, d := range im.Manifests {
		if d.Annotations[AnnotationContainerdName] != n {
			continue
		}
		switch d.MediaType {
		case MediaTypeOCIIndex:
			sub, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return "", err
			}
			return d.Digest.String(), remote.WriteIndex(r, sub, ro...)
		default:
			img, err := idx.Image(d.Digest)
			if err != nil {
				return "", err
			}
			return d.Digest.String(), remote.Write(r, img, ro...)
		}
	}
	return "", fmt.Errorf("no image named %s in the tarball", n)
}

// untar writes a layout tarball's files under dir.
func untar(b []byte, dir string) error {
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return err
			}
		}
	}
}
