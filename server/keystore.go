package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/structs"
)

// The keystore: this server's root keys' material. Key material is never
// written to Raft or to a snapshot; each server keeps it in files under
// <DataDir>/keystore (one file per key, mode 0600, in a 0700 directory),
// and a server that lacks a key fetches it from another server
// (Keyring.Get, servers only). Without a DataDir (dev mode, tests) keys
// live in memory only.

// rootKeySize is the length of an AES-256 key.
const rootKeySize = 32

// keystoreDirName is the keystore's directory under the data dir.
const keystoreDirName = "keystore"

// keyFileSuffix names a key file: <KeyID>.nks.json.
const keyFileSuffix = ".nks.json"

// keyFile is the on-disk form of one key.
type keyFile struct {
	Meta *structs.RootKeyMeta
	Key  []byte
}

// rootKeyEntry is a loaded key: its material and what is derived from it.
type rootKeyEntry struct {
	key  []byte
	aead cipher.AEAD
	// signKey signs workload identities: HMAC-SHA256(key, purpose), so
	// the encryption key itself is never used for two purposes.
	signKey []byte
}

// keystore holds the keys this server has. Safe for concurrent use.
type keystore struct {
	dir    string // "" keeps keys in memory only
	logger hclog.Logger

	mu   sync.RWMutex
	keys map[string]*rootKeyEntry // by KeyID; guarded by mu

	// writeMu: a key file write holds it shared; close takes it whole, so
	// that once the server has shut down nothing writes in its data
	// directory any more.
	writeMu sync.RWMutex
	closed  bool // guarded by writeMu
}

// close makes every later add fail without writing, once the writes in
// progress are done (server shutdown).
func (ks *keystore) close() {
	ks.writeMu.Lock()
	ks.closed = true
	ks.writeMu.Unlock()
}

// newKeystore opens (creating) the keystore under dataDir and loads every
// key file in it; a file that does not load is logged and skipped (the
// key can be fetched again from another server).
func newKeystore(dataDir string, logger hclog.Logger) (*keystore, error) {
	ks := &keystore{logger: logger, keys: map[string]*rootKeyEntry{}}
	if dataDir == "" {
		return ks, nil
	}
	ks.dir = filepath.Join(dataDir, keystoreDirName)
	if err := os.MkdirAll(ks.dir, 0o700); err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	if err := os.Chmod(ks.dir, 0o700); err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	entries, err := os.ReadDir(ks.dir)
	if err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), keyFileSuffix) {
			continue
		}
		if err := ks.loadFile(filepath.Join(ks.dir, e.Name())); err != nil {
			logger.Error("skipping a key file that does not load", "file", e.Name(), "error", err)
		}
	}
	return ks, nil
}

func (ks *keystore) loadFile(path string) error {
	buf, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var kf keyFile
	if err := json.Unmarshal(buf, &kf); err != nil {
		return err
	}
	if kf.Meta == nil || kf.Meta.KeyID+keyFileSuffix != filepath.Base(path) {
		return errors.New("key file does not match its name")
	}
	entry, err := newRootKeyEntry(kf.Key)
	if err != nil {
		return err
	}
	ks.mu.Lock()
	ks.keys[kf.Meta.KeyID] = entry
	ks.mu.Unlock()
	return nil
}

func newRootKeyEntry(key []byte) (*rootKeyEntry, error) {
	if len(key) != rootKeySize {
		return nil, fmt.Errorf("root key is %d bytes, want %d", len(key), rootKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("drover workload identity signing key"))
	return &rootKeyEntry{key: key, aead: aead, signKey: mac.Sum(nil)}, nil
}

// newRootKey makes a fresh random key (not yet stored).
func newRootKey(createTime int64) (*structs.RootKey, error) {
	key := make([]byte, rootKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &structs.RootKey{Key: key, Meta: &structs.RootKeyMeta{KeyID: structs.GenerateUUID(),
		Algorithm: structs.EncryptionAlgorithmAES256GCM, CreateTime: createTime, State: structs.RootKeyStateActive}}, nil
}

// add stores a key: on disk first (written to a temporary file, synced,
// renamed), then in memory. Adding a key already held does nothing.
func (ks *keystore) add(rk *structs.RootKey) error {
	if rk == nil || rk.Meta == nil || rk.Meta.KeyID == "" {
		return errors.New("keystore: key without an ID")
	}
	if strings.ContainsAny(rk.Meta.KeyID, `/\.`) {
		return fmt.Errorf("keystore: invalid key ID %q", rk.Meta.KeyID)
	}
	if _, ok := ks.get(rk.Meta.KeyID); ok {
		return nil
	}
	ks.writeMu.RLock()
	defer ks.writeMu.RUnlock()
	if ks.closed {
		return structs.ErrShutdown
	}
	entry, err := newRootKeyEntry(rk.Key)
	if err != nil {
		return fmt.Errorf("keystore: %w", err)
	}
	if ks.dir != "" {
		meta := *rk.Meta
		buf, err := json.Marshal(keyFile{Meta: &meta, Key: rk.Key})
		if err != nil {
			return err
		}
		if err := writeFileAtomic(filepath.Join(ks.dir, rk.Meta.KeyID+keyFileSuffix), buf); err != nil {
			return fmt.Errorf("keystore: %w", err)
		}
	}
	ks.mu.Lock()
	if _, ok := ks.keys[rk.Meta.KeyID]; !ok {
		ks.keys[rk.Meta.KeyID] = entry
	}
	ks.mu.Unlock()
	return nil
}

// writeFileAtomic writes buf to path with mode 0600 through a temporary
// file in the same directory.
func writeFileAtomic(path string, buf []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-key-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(buf); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// get returns a key, if this server has it.
func (ks *keystore) get(id string) (*rootKeyEntry, bool) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	e, ok := ks.keys[id]
	return e, ok
}

// variableAAD binds a ciphertext to its variable: a sealed value copied
// to another path or namespace does not open.
func variableAAD(ns, path string) []byte {
	return []byte(ns + "\x00" + path)
}

// seal encrypts items for the variable (ns, path) with key: the result is
// the nonce followed by the ciphertext.
func (e *rootKeyEntry) seal(ns, path string, items structs.VariableItems) ([]byte, error) {
	plain, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, e.aead.NonceSize(), e.aead.NonceSize()+len(plain)+e.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := e.aead.Seal(nonce, nonce, plain, variableAAD(ns, path))
	clear(plain)
	return out, nil
}

// open decrypts what seal made.
func (e *rootKeyEntry) open(ns, path string, data []byte) (structs.VariableItems, error) {
	n := e.aead.NonceSize()
	if len(data) < n+e.aead.Overhead() {
		return nil, errors.New("ciphertext too short")
	}
	plain, err := e.aead.Open(nil, data[:n], data[n:], variableAAD(ns, path))
	if err != nil {
		return nil, err
	}
	var items structs.VariableItems
	err = json.Unmarshal(plain, &items)
	clear(plain)
	return items, err
}
