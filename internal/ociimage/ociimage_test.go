package ociimage

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"
)

const testVersion = "v0.0.0-imagetest"

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// TestMain removes the static binary staticBinary built (about 100 MB) when the package's tests end:
// it is shared by every test, so no single test's TempDir can own it.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// staticBinary builds coroner for linux/amd64 as make dist does (CGO_ENABLED=0, -trimpath), once
// per test binary.
func staticBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a static coroner binary: not in -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "coroner-image-test-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "coroner")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+testVersion, "-o", builtBin, "../../cmd/coroner")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	require.NoError(t, buildErr)
	return builtBin
}

// testImage builds the watch flavour (the CLI differs only in Cmd) from the static binary and the
// machine's CA bundle, and writes it as an archive and an OCI layout in dir.
func testImage(t *testing.T, dir string) (archive string, ca []byte) {
	t.Helper()
	bin, err := os.ReadFile(staticBinary(t))
	require.NoError(t, err)
	ca, err = os.ReadFile(CAPath)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("no CA bundle at %s on this machine (Debian: apt-get install ca-certificates)", CAPath)
	}
	require.NoError(t, err)
	spec := Spec{Binary: bin, Arch: "amd64", CA: ca, Version: testVersion, Cmd: []string{"watch"},
		Dirs: []string{"/var/lib/coroner"}, Ports: []string{"8080/tcp"}, Created: time.Unix(1700000000, 0).UTC()}
	img, err := Build(spec)
	require.NoError(t, err)
	archive = filepath.Join(dir, "coroner.image.tar")
	require.NoError(t, WriteArchive(archive, "coroner:imagetest", img))
	require.NoError(t, WriteLayout(filepath.Join(dir, "oci"), "imagetest", img))

	again, err := Build(spec)
	require.NoError(t, err)
	d1, err := img.Digest()
	require.NoError(t, err)
	d2, err := again.Digest()
	require.NoError(t, err)
	require.Equal(t, d1, d2, "the same binary and time give the same image")
	return archive, ca
}

// TestImageConfigAndLayers reads the image back as podman would, from the docker archive and from
// the OCI layout, and checks what a container of it gets: the user, the entrypoint, HOME, a
// sticky world-writable /tmp, the CA bundle where Go looks for it, and a binary that runs.
func TestImageConfigAndLayers(t *testing.T) {
	dir := t.TempDir()
	archive, ca := testImage(t, dir)

	fromTar, err := tarball.ImageFromPath(archive, nil)
	require.NoError(t, err)
	idx, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	require.Equal(t, "linux", im.Manifests[0].Platform.OS)
	require.Equal(t, "amd64", im.Manifests[0].Platform.Architecture)
	require.Equal(t, "imagetest", im.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	fromLayout, err := idx.Image(im.Manifests[0].Digest)
	require.NoError(t, err)
	for _, img := range []v1.Image{fromTar, fromLayout} {
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, "linux", cf.OS)
		require.Equal(t, "amd64", cf.Architecture)
		require.Equal(t, "65532:65532", cf.Config.User)
		require.Equal(t, []string{"/coroner"}, cf.Config.Entrypoint)
		require.Equal(t, []string{"watch"}, cf.Config.Cmd)
		require.Contains(t, cf.Config.Env, "HOME=/home/nonroot")
		require.Contains(t, cf.Config.Env, "SSL_CERT_FILE="+CAPath)
		require.Contains(t, cf.Config.ExposedPorts, "8080/tcp")
		require.Equal(t, testVersion, cf.Config.Labels["org.opencontainers.image.version"])
	}

	files := map[string]*tar.Header{}
	contents := map[string][]byte{}
	tr := tar.NewReader(mutate.Extract(fromLayout))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		name := strings.TrimSuffix(h.Name, "/")
		files[name] = h
		if h.Typeflag == tar.TypeReg {
			contents[name], err = io.ReadAll(tr)
			require.NoError(t, err)
		}
	}
	require.Contains(t, files, "tmp")
	require.Equal(t, byte(tar.TypeDir), files["tmp"].Typeflag)
	require.Equal(t, int64(0o1777), files["tmp"].Mode&0o7777, "/tmp is world-writable and sticky")
	require.Equal(t, UID, files["home/nonroot"].Uid, "the user owns its home")
	require.Equal(t, UID, files["var/lib/coroner"].Uid, "the user owns watch's bundle directory")
	require.Contains(t, string(contents["etc/passwd"]), "nonroot:x:65532:65532:nonroot:/home/nonroot:")
	require.Equal(t, ca, contents["etc/ssl/certs/ca-certificates.crt"], "the CA bundle is the build machine's")
	require.Equal(t, int64(0o755), files["coroner"].Mode&0o777)

	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the image's binary is linux/amd64; this machine is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := filepath.Join(t.TempDir(), "coroner")
	require.NoError(t, os.WriteFile(bin, contents["coroner"], 0o755))
	out, err := exec.Command(bin, "--version").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), testVersion)
}
