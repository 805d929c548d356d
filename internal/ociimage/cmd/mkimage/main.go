// Command mkimage writes coroner's container images for make dist, from the static binaries it
// built and the build machine's CA bundle, without pulling any base image:
//
//	mkimage -version v1.2.3 -ca /etc/ssl/certs/ca-certificates.crt -out dist \
//	    linux/amd64=dist/coroner-linux-amd64/coroner linux/arm64=dist/coroner-linux-arm64/coroner
//
// It writes, for the CLI (coroner) and for the in-cluster watcher (coroner-watch), an OCI
// layout directory holding every platform (dist/oci/NAME) and one docker-archive tarball per
// platform (dist/NAME-VERSION-linux-ARCH.image.tar, for podman load or docker load).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coroner-dev/coroner/internal/ociimage"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	version := fs.String("version", "dev", "the version, in labels and tags")
	revision := fs.String("revision", "", "the source commit, a label")
	ca := fs.String("ca", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to copy into the images")
	out := fs.String("out", "dist", "the output directory")
	repo := fs.String("repo", "coroner", "the image name the tags carry")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("name at least one linux/ARCH=BINARY")
	}
	caPEM, err := os.ReadFile(*ca)
	if err != nil {
		return fmt.Errorf("the CA bundle: %w", err)
	}
	// The images' times are the commit's (SOURCE_DATE_EPOCH), so a rebuild of the same commit
	// gives the same digests; without it, the Unix epoch, as ko does.
	created := time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
		}
		created = time.Unix(sec, 0).UTC()
	}
	flavours := []struct {
		name string
		spec ociimage.Spec
	}{
		{*repo, ociimage.Spec{Cmd: []string{"--help"}}},
		{*repo + "-watch", ociimage.Spec{Cmd: []string{"watch", "--dir=/var/lib/coroner"}, Dirs: []string{"/var/lib/coroner"}, Ports: []string{"8080/tcp"}}},
	}
	for _, fl := range flavours {
		var images []v1.Image
		for _, arg := range fs.Args() {
			platform, bin, ok := strings.Cut(arg, "=")
			osName, arch, _ := strings.Cut(platform, "/")
			if !ok || osName != "linux" || arch == "" {
				return fmt.Errorf("%q: want linux/ARCH=BINARY", arg)
			}
			data, err := os.ReadFile(bin)
			if err != nil {
				return err
			}
			s := fl.spec
			s.Binary, s.Arch, s.CA, s.Version, s.Revision, s.Created = data, arch, caPEM, *version, *revision, created
			img, err := ociimage.Build(s)
			if err != nil {
				return fmt.Errorf("%s %s: %w", fl.name, platform, err)
			}
			images = append(images, img)
			tar := filepath.Join(*out, fmt.Sprintf("%s-%s-linux-%s.image.tar", fl.name, *version, arch))
			if err := ociimage.WriteArchive(tar, fl.name+":"+tagOf(*version), img); err != nil {
				return err
			}
			fmt.Println(tar)
		}
		dir := filepath.Join(*out, "oci", fl.name)
		if err := ociimage.WriteLayout(dir, tagOf(*version), images...); err != nil {
			return err
		}
		fmt.Println(dir)
	}
	return nil
}

// tagOf makes a version a valid image tag: git describe's "v1.2-3-gabc-dirty" is one already; a
// "+" (semver build metadata) is not.
func tagOf(version string) string {
	return strings.ReplaceAll(version, "+", "_")
}
