package cri

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sidebench/sidebench/harness/history"
)

// Images are names only: a pull is instant and records an image of
// Config.ImageSize bytes whose ID is the SHA-256 of its name.

func imageID(name string) string {
	if strings.HasPrefix(name, "sha256:") {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// imageRefLocked returns the ID of image name (pulled or not).
func (s *Server) imageRefLocked(name string) string {
	if img, ok := s.images[name]; ok {
		return img.Id
	}
	return imageID(name)
}

// ImageStatus returns the image, or no image if it was never pulled.
func (s *Server) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := req.GetImage().GetImage()
	if s.pullFailLocked("", name) != nil {
		// Absent while its pulls fail, so the kubelet pulls it.
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: s.images[name]}, nil
}

// PullImage records the image at once.
func (s *Server) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	name := req.GetImage().GetImage()
	s.mu.Lock()
	defer s.mu.Unlock()
	md := req.GetSandboxConfig().GetMetadata()
	if f := s.pullFailLocked(md.GetNamespace()+"/"+md.GetName(), name); f != nil {
		f.hit = true
		var sb *sandbox
		for _, x := range s.sandboxes {
			if x.config.GetMetadata().GetUid() == md.GetUid() {
				sb = x
			}
		}
		s.emit(sb, history.Event{Kind: history.ContainerStartFailed, Pod: f.pod, Container: f.container, Msg: "ErrImagePull: " + name})
		return nil, status.Errorf(codes.NotFound, "pull of %s failed: registry unavailable (sidebench image-pull-failure)", name)
	}
	img, ok := s.images[name]
	if !ok {
		img = &runtimeapi.Image{
			Id:       imageID(name),
			RepoTags: []string{name},
			Size:     s.cfg.ImageSize,
			Spec:     &runtimeapi.ImageSpec{Image: name},
		}
		s.images[name] = img
		s.images[img.Id] = img
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.Id}, nil
}

func (s *Server) listImages(f *runtimeapi.ImageFilter) []*runtimeapi.Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runtimeapi.Image
	for key, img := range s.images {
		if key != img.Id {
			continue // each image once, under its ID
		}
		if want := f.GetImage().GetImage(); want != "" && want != img.Id && s.images[want] != img {
			continue
		}
		out = append(out, img)
	}
	return out
}

// ListImages lists pulled images.
func (s *Server) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	return &runtimeapi.ListImagesResponse{Images: s.listImages(req.GetFilter())}, nil
}

// StreamImages sends ListImages' answer as one message.
func (s *Server) StreamImages(req *runtimeapi.StreamImagesRequest, st runtimeapi.ImageService_StreamImagesServer) error {
	items := s.listImages(req.GetFilter())
	if len(items) == 0 {
		return nil
	}
	return st.Send(&runtimeapi.StreamImagesResponse{Images: items})
}

// RemoveImage forgets an image. Idempotent.
func (s *Server) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if img, ok := s.images[req.GetImage().GetImage()]; ok {
		for k, v := range s.images {
			if v == img {
				delete(s.images, k)
			}
		}
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (s *Server) fsUsage(used uint64) *runtimeapi.FilesystemUsage {
	return &runtimeapi.FilesystemUsage{
		Timestamp:  s.now(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: s.cfg.FsMountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: used},
		InodesUsed: &runtimeapi.UInt64Value{Value: 1},
	}
}

// ImageFsInfo reports the images' total size on FsMountpoint.
func (s *Server) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	s.mu.Lock()
	var used uint64
	for k, img := range s.images {
		if k == img.Id {
			used += img.Size
		}
	}
	s.mu.Unlock()
	return &runtimeapi.ImageFsInfoResponse{
		ImageFilesystems:     []*runtimeapi.FilesystemUsage{s.fsUsage(used)},
		ContainerFilesystems: []*runtimeapi.FilesystemUsage{s.fsUsage(used)},
	}, nil
}
