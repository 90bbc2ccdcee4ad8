package embedded

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// runAs is the unprivileged account PostgreSQL runs as when we are root.
type runAs struct {
	name     string
	uid, gid uint32
}

func lookupRunAs(name string) (*runAs, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("running as root: PostgreSQL needs an unprivileged OS user %q (created by the Debian postgresql package, or set embedded.Config.OSUser): %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("uid of %q: %w", name, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("gid of %q: %w", name, err)
	}
	return &runAs{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

func (r *runAs) credential() *syscall.Credential {
	if r == nil {
		return nil
	}
	return &syscall.Credential{Uid: r.uid, Gid: r.gid, NoSetGroups: true}
}

// canTraverse reports whether every ancestor of dir grants search permission to
// the account (mode bits only: owner, group, other).
func (r *runAs) canTraverse(dir string) bool {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			sys, ok := st.Sys().(*syscall.Stat_t)
			if !ok {
				return false
			}
			mode := st.Mode().Perm()
			switch {
			case sys.Uid == r.uid:
				if mode&0o100 == 0 {
					return false
				}
			case sys.Gid == r.gid:
				if mode&0o010 == 0 {
					return false
				}
			default:
				if mode&0o001 == 0 {
					return false
				}
			}
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// fallbackDataDir is where a cluster goes when the requested directory is not
// reachable by the PostgreSQL account: a stable path derived from the requested
// one, so a restart finds the same cluster again.
func fallbackDataDir(requested string) string {
	sum := sha256.Sum256([]byte(requested))
	return filepath.Join("/var/lib/queenbridge", "pg-"+hex.EncodeToString(sum[:6]))
}

// chownTree hands dir and everything below it to the account. A file that
// goes between the listing and its turn (a cluster that still writes in
// dir) needs no owner.
func (r *runAs) chownTree(dir string) error {
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err == nil {
			err = os.Lchown(path, int(r.uid), int(r.gid))
		}
		if errors.Is(err, fs.ErrNotExist) && path != dir {
			return nil
		}
		return err
	})
}
