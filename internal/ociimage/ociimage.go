// Package ociimage assembles coroner's container images from scratch, as ko does: no base image
// is pulled (none can be, on a machine without a registry), so the few files a static Go program
// needs in a container are written here — a non-root user, a writable /tmp, a home directory and
// a CA bundle — beside the binary. The images are written as an OCI layout (one index holding
// every platform) and as docker-archive tarballs that `podman load` and `docker load` read.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the images run as: distroless's "nonroot", so that volumes prepared for distroless
// images (fsGroup 65532) fit these too.
const (
	UID     = 65532
	User    = "65532:65532"
	Home    = "/home/nonroot"
	BinPath = "/coroner"
	// CAPath is where Go's crypto/x509 (and most TLS stacks) look for the system roots.
	CAPath = "/etc/ssl/certs/ca-certificates.crt"
)

// Spec is one image: the static binary for one platform, and what the container runs.
type Spec struct {
	Binary   []byte // a static linux executable (CGO_ENABLED=0) for Arch
	Arch     string // GOARCH: amd64, arm64
	CA       []byte // the CA bundle, PEM
	Version  string // recorded as the org.opencontainers.image.version label
	Cmd      []string
	Dirs     []string // more directories owned by the user (watch's /var/lib/coroner)
	Ports    []string // exposed ports, "8080/tcp"
	Workdir  string   // the working directory; Home when empty
	Created  time.Time
	Revision string // the source's commit, a label
}

// Build returns the image of s: two layers (the base files, then the binary) and a config that
// runs BinPath as User.
func Build(s Spec) (v1.Image, error) {
	if len(s.Binary) == 0 {
		return nil, fmt.Errorf("no binary")
	}
	if len(s.CA) == 0 {
		return nil, fmt.Errorf("no CA bundle")
	}
	base, err := baseLayer(s)
	if err != nil {
		return nil, err
	}
	bin, err := layer([]entry{{name: BinPath, mode: 0o755, data: s.Binary}}, s.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{CreatedBy: "coroner ociimage: passwd, group, /tmp, home, CA bundle", Created: v1.Time{Time: s.Created}}},
		mutate.Addendum{Layer: bin, History: v1.History{CreatedBy: "coroner ociimage: " + BinPath, Created: v1.Time{Time: s.Created}}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", s.Arch
	if s.Arch == "arm64" {
		cf.Variant = "v8"
	}
	cf.Created = v1.Time{Time: s.Created}
	workdir := s.Workdir
	if workdir == "" {
		workdir = Home
	}
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{BinPath},
		Cmd:        s.Cmd,
		WorkingDir: workdir,
		Env: []string{
			"PATH=/",
			"HOME=" + Home,
			"TMPDIR=/tmp",
			"SSL_CERT_FILE=" + CAPath,
		},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "coroner",
			"org.opencontainers.image.version":  s.Version,
			"org.opencontainers.image.revision": s.Revision,
			"org.opencontainers.image.source":   "https://github.com/coroner-dev/coroner",
		},
	}
	if len(s.Ports) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range s.Ports {
			cf.Config.ExposedPorts[p] = struct{}{}
		}
	}
	return mutate.ConfigFile(img, cf)
}

// entry is one file or directory of a layer.
type entry struct {
	name string
	mode int64
	dir  bool
	uid  int
	data []byte
}

// baseLayer holds what a static program expects of a Linux root: users, a sticky /tmp, the
// user's home, name resolution order and the CA bundle.
func baseLayer(s Spec) (v1.Layer, error) {
	files := []entry{
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:" + Home + ":/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: strings.TrimPrefix(CAPath, "/"), mode: 0o644, data: s.CA},
		{name: "tmp", mode: 0o1777, dir: true},
		{name: "root", mode: 0o700, dir: true},
		{name: strings.TrimPrefix(Home, "/"), mode: 0o700, dir: true, uid: UID},
	}
	for _, d := range s.Dirs {
		files = append(files, entry{name: strings.TrimPrefix(d, "/"), mode: 0o755, dir: true, uid: UID})
	}
	return layer(files, s.Created)
}

// layer writes entries as an uncompressed tar, every parent directory first and in name order,
// with one modification time, so the same inputs give the same digest.
func layer(files []entry, mtime time.Time) (v1.Layer, error) {
	all := map[string]entry{}
	for _, f := range files {
		f.name = strings.TrimPrefix(path.Clean(f.name), "/") // tar names are relative to the root
		all[f.name] = f
		for d := path.Dir(f.name); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := all[d]; !ok {
				all[d] = entry{name: d, mode: 0o755, dir: true}
			}
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range slices.Sorted(maps.Keys(all)) {
		f := all[n]
		h := &tar.Header{Name: n, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime, Format: tar.FormatPAX}
		if f.uid != 0 {
			h.Uname, h.Gname = "nonroot", "nonroot"
		}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, n+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// WriteLayout writes images (one per platform) as an OCI image layout in dir, under one index
// whose manifests carry their platform and the reference name tag.
func WriteLayout(dir, tag string, images ...v1.Image) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform:    cf.Platform(),
			Annotations: map[string]string{"org.opencontainers.image.ref.name": tag},
		}})
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	_, err := layout.Write(dir, idx)
	return err
}

// WriteArchive writes img as a docker-archive tarball named ref, which `podman load` and
// `docker load` read.
func WriteArchive(file, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(file, tag, img)
}
