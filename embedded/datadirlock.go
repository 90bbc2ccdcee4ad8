package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// heldByAnother reads PostgreSQL's lock file in dataDir, postmaster.pid,
// whose first line is the process id of the postmaster that holds the
// directory. It is called before a start, so that a directory a running
// cluster writes in is left alone, and once a postmaster this package
// started has exited before accepting connections: a lock file that names
// another process that is still alive is why (PostgreSQL refuses a
// directory whose lock a live postmaster holds, and leaves that lock file
// alone). A stale file from a crash names a dead process (or ours, or our
// postmaster's parent, this process), which PostgreSQL itself takes over,
// so it is no answer here.
func heldByAnother(dataDir string, ours int) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 || pid == ours {
		return 0, false
	}
	// Signal 0 checks that the process exists; EPERM means it exists under
	// another user (the postgres account, when we are not root).
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0, false
	}
	return pid, true
}

// dataDirHeld says that the postmaster pid holds dataDir.
func dataDirHeld(dataDir string, pid int) error {
	return fmt.Errorf("%w: %s is held by another process (PID %d, in %s): another bridge or PostgreSQL runs on it; stop that one, or give this one another data directory",
		ErrDataDirInUse, dataDir, pid, filepath.Join(dataDir, "postmaster.pid"))
}
