// oci-image: packs a root file system directory into a one-layer image and writes it as a
// docker-archive tarball that `ctr images import` accepts: images for the test bed's real node
// without a container engine or a registry (hack/cluster/images.sh).
//
//	oci-image --rootfs DIR --out FILE.tar --tag NAME:TAG [--tag ...] [--user 999:999]
//	          [--env K=V ...] [--workdir /data] [--entrypoint /bin/x ...] [--cmd arg ...]
//
// File owners and modes are taken from DIR as they are (build it as root); timestamps are
// zeroed so the same DIR gives the same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var tags, env, entrypoint, cmd list
	rootfs := flag.String("rootfs", "", "directory holding the image's files")
	out := flag.String("out", "", "docker-archive tarball to write")
	user := flag.String("user", "", "user (uid[:gid]) the image runs as")
	workdir := flag.String("workdir", "", "working directory")
	flag.Var(&tags, "tag", "image name (repeatable)")
	flag.Var(&env, "env", "environment variable K=V (repeatable)")
	flag.Var(&entrypoint, "entrypoint", "entrypoint argument (repeatable)")
	flag.Var(&cmd, "cmd", "default command argument (repeatable)")
	flag.Parse()
	if *rootfs == "" || *out == "" || len(tags) == 0 {
		fmt.Fprintln(os.Stderr, "oci-image: --rootfs, --out and at least one --tag are required")
		os.Exit(2)
	}
	if err := run(*rootfs, *out, tags, env, entrypoint, cmd, *user, *workdir); err != nil {
		fmt.Fprintln(os.Stderr, "oci-image:", err)
		os.Exit(1)
	}
}

func run(rootfs, out string, tags, env, entrypoint, cmd []string, user, workdir string) error {
	layerTar, err := tarDir(rootfs)
	if err != nil {
		return fmt.Errorf("packing %s: %w", rootfs, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config = v1.Config{Env: env, Entrypoint: entrypoint, Cmd: cmd, User: user, WorkingDir: workdir}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	for _, t := range tags {
		ref, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("tag %q: %w", t, err)
		}
		refs[ref] = img
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// tarDir writes DIR's tree as a tar stream in a stable order, with owners and modes as on disk.
func tarDir(dir string) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		link := ""
		if info.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return nil, err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
		}
		hdr.Uname, hdr.Gname = "", ""
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = time.Unix(0, 0), time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
