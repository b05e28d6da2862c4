package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	bolt "go.etcd.io/bbolt"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/internal/boltcheck"
	"github.com/drover-project/drover/structs"
)

// Bucket and key names: part of the on-disk format.
var (
	bucketAllocs = []byte("allocs")
	keyAlloc     = []byte("alloc")
	taskPrefix   = "task/"
)

// openTimeout bounds the wait for the file lock (another client running on
// the same data dir).
const openTimeout = 5 * time.Second

// TaskRunnerState is what a task runner saves.
type TaskRunnerState struct {
	// State is the task state reported to the servers.
	State *structs.TaskState
	// Handle is the driver's handle state while the task runs (nil once it
	// has exited).
	Handle *driver.HandleState
}

// DB is the client state file. It is safe for concurrent use.
type DB struct {
	db *bolt.DB
}

// ErrLocked is returned by Open when another process holds the file.
var ErrLocked = errors.New("client state file is in use by another process")

// Open opens (creating if needed) the state file at path.
func Open(path string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	// bbolt crashes on a file cut short; refuse it by name instead.
	if err := boltcheck.Check(path); err != nil {
		return nil, fmt.Errorf("opening client state: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout, NoFreelistSync: true})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("opening client state %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketAllocs)
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	return &DB{db: db}, nil
}

// Close closes the file.
func (d *DB) Close() error { return d.db.Close() }

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, structs.MsgpackHandle).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decode(b []byte, out any) error {
	return codec.NewDecoderBytes(b, structs.MsgpackHandle).Decode(out)
}

// PutAlloc saves an allocation (with its job), creating its bucket.
func (d *DB) PutAlloc(a *structs.Allocation) error {
	b, err := encode(a)
	if err != nil {
		return fmt.Errorf("encoding alloc %s: %w", a.ID, err)
	}
	return d.db.Update(func(tx *bolt.Tx) error {
		ab, err := tx.Bucket(bucketAllocs).CreateBucketIfNotExists([]byte(a.ID))
		if err != nil {
			return err
		}
		return ab.Put(keyAlloc, b)
	})
}

// PutTaskState saves a task runner's state. The allocation must have been
// saved first.
func (d *DB) PutTaskState(allocID, task string, s *TaskRunnerState) error {
	b, err := encode(s)
	if err != nil {
		return fmt.Errorf("encoding task %s/%s: %w", allocID, task, err)
	}
	return d.db.Update(func(tx *bolt.Tx) error {
		ab := tx.Bucket(bucketAllocs).Bucket([]byte(allocID))
		if ab == nil {
			return fmt.Errorf("saving task %s/%s: %w", allocID, task, structs.ErrNotFound)
		}
		return ab.Put([]byte(taskPrefix+task), b)
	})
}

// DeleteAlloc removes an allocation and its tasks' states.
func (d *DB) DeleteAlloc(id string) error {
	return d.db.Update(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketAllocs).DeleteBucket([]byte(id))
		if errors.Is(err, bolt.ErrBucketNotFound) {
			return nil
		}
		return err
	})
}

// Entry is one saved allocation with its tasks' states.
type Entry struct {
	Alloc *structs.Allocation
	Tasks map[string]*TaskRunnerState
}

// Allocs loads every saved allocation. An entry that cannot be decoded is
// reported in the returned error (joined) and skipped; the others load.
func (d *DB) Allocs() ([]*Entry, error) {
	var out []*Entry
	var errs []error
	err := d.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAllocs).ForEachBucket(func(id []byte) error {
			ab := tx.Bucket(bucketAllocs).Bucket(id)
			raw := ab.Get(keyAlloc)
			if raw == nil {
				errs = append(errs, fmt.Errorf("alloc %s: no allocation saved", id))
				return nil
			}
			e := &Entry{Alloc: &structs.Allocation{}, Tasks: map[string]*TaskRunnerState{}}
			if err := decode(raw, e.Alloc); err != nil {
				errs = append(errs, fmt.Errorf("alloc %s: %w", id, err))
				return nil
			}
			c := ab.Cursor()
			for k, v := c.Seek([]byte(taskPrefix)); k != nil && bytes.HasPrefix(k, []byte(taskPrefix)); k, v = c.Next() {
				ts := &TaskRunnerState{}
				if err := decode(v, ts); err != nil {
					errs = append(errs, fmt.Errorf("alloc %s task %s: %w", id, k[len(taskPrefix):], err))
					continue
				}
				e.Tasks[string(k[len(taskPrefix):])] = ts
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, errors.Join(errs...)
}
