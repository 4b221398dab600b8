// Package durable writes files that must survive a crash or a power cut:
// each write is on disk (file and directory entry fsynced) before it
// returns. A host key learned, a mark saying Terraform was abandoned, the
// variables a later destroy needs: losing one of these to the page cache
// loses the only record of something that exists.
package durable

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data, as os.WriteFile does, atomically: the
// data goes to a temporary file beside it, which is fsynced and renamed
// over path, and the directory is fsynced so the rename is kept. A reader
// sees the old content or the new, never a part.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// Append adds data at the end of path, creating it with perm, and fsyncs
// the file (and its directory when it was created).
func Append(path string, data []byte, perm os.FileMode) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// Remove removes path (absent is no error) and fsyncs its directory, so
// the removal is kept.
func Remove(path string) error {
	if err := os.Remove(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, which makes the entries created, renamed or
// removed in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	return errors.Join(serr, cerr)
}
