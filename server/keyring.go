package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// The keyring: which root keys exist (their metadata, replicated through
// Raft) and their material (in each server's keystore, keystore.go). The
// first leader makes the first key; Keyring.Rotate makes a new active one.
// Every server runs replicateKeys, which fetches the material of any key
// in the state that its keystore lacks from another server; a server
// that needs a key before that (a read right after a rotation) fetches it
// on the spot (ensureKey).

// rekeyBatch is how many variables one Raft entry of a full rotation
// re-encrypts.
const rekeyBatch = 64

// keyFetchTimeout bounds one attempt to fetch a key from the servers.
const keyFetchTimeout = 10 * time.Second

// errNoKeyring answers variable operations before the first root key.
var errNoKeyring = structs.NewError(structs.ErrCodeNoLeader, "the keyring is not yet initialized: no root key (wait for a leader)")

// ensureKey returns a key's material, fetching it from the other
// servers (the leader first) when this server lacks it.
func (s *Server) ensureKey(id string) (*rootKeyEntry, error) {
	if e, ok := s.keystore.get(id); ok {
		return e, nil
	}
	s.keyFetchMu.Lock()
	defer s.keyFetchMu.Unlock()
	if e, ok := s.keystore.get(id); ok {
		return e, nil
	}
	var errs []error
	for _, addr := range s.keyPeers() {
		var resp structs.KeyringGetRootKeyResponse
		args := structs.KeyringGetRootKeyRequest{KeyID: id, QueryOptions: structs.QueryOptions{
			Region: s.config.Region, AllowStale: true, AuthToken: s.clusterSecret()}}
		if err := s.pool.RPC(addr, "Keyring.Get", &args, &resp); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		if resp.Key == nil || resp.Key.Meta == nil || resp.Key.Meta.KeyID != id {
			errs = append(errs, fmt.Errorf("%s: answered without key %s", addr, id))
			continue
		}
		if err := s.keystore.add(resp.Key); err != nil {
			return nil, err
		}
		s.logger.Info("fetched root key from another server", "key_id", id, "from", addr)
		e, _ := s.keystore.get(id)
		return e, nil
	}
	return nil, structs.NewError(structs.ErrCodeInternal, "root key %s is not on this server and no other server gave it: %v", id, errors.Join(errs...))
}

// keyPeers lists the other servers' RPC addresses, the leader first.
func (s *Server) keyPeers() []string {
	var out []string
	leader := s.Leader()
	if leader != "" && leader != s.rpcAddr {
		out = append(out, leader)
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return out
	}
	for _, srv := range f.Configuration().Servers {
		addr := string(srv.Address)
		if addr != s.rpcAddr && addr != leader {
			out = append(out, addr)
		}
	}
	return out
}

// activeKey returns the active key's metadata and material.
func (s *Server) activeKey(st *state.StateStore) (*structs.RootKeyMeta, *rootKeyEntry, error) {
	meta, err := st.ActiveRootKeyMeta(nil)
	if structs.CodeOf(err) == structs.ErrCodeNotFound {
		return nil, nil, errNoKeyring
	}
	if err != nil {
		return nil, nil, err
	}
	e, err := s.ensureKey(meta.KeyID)
	return meta, e, err
}

// encryptVariable seals v's items with the active key.
func (s *Server) encryptVariable(st *state.StateStore, v *structs.VariableDecrypted) (*structs.VariableEncrypted, error) {
	meta, key, err := s.activeKey(st)
	if err != nil {
		return nil, err
	}
	data, err := key.seal(v.Namespace, v.Path, v.Items)
	if err != nil {
		return nil, fmt.Errorf("encrypting variable %s: %w", &v.VariableMetadata, err)
	}
	return &structs.VariableEncrypted{VariableMetadata: v.VariableMetadata, Data: data, KeyID: meta.KeyID}, nil
}

// decryptVariable opens a stored variable.
func (s *Server) decryptVariable(v *structs.VariableEncrypted) (*structs.VariableDecrypted, error) {
	key, err := s.ensureKey(v.KeyID)
	if err != nil {
		return nil, err
	}
	items, err := key.open(v.Namespace, v.Path, v.Data)
	if err != nil {
		return nil, structs.NewError(structs.ErrCodeInternal, "decrypting variable %s with key %s: %v", &v.VariableMetadata, v.KeyID, err)
	}
	return &structs.VariableDecrypted{VariableMetadata: v.VariableMetadata, Items: items}, nil
}

// newActiveKey makes a key, stores it in this (the leader's) keystore,
// and records it as the active key through Raft.
func (s *Server) newActiveKey() (*structs.RootKeyMeta, uint64, error) {
	rk, err := newRootKey(time.Now().UnixNano())
	if err != nil {
		return nil, 0, err
	}
	if err := s.keystore.add(rk); err != nil {
		return nil, 0, err
	}
	index, _, err := s.raftApply(structs.RootKeyMetaUpsertRequestType, &structs.RootKeyMetaUpsertRequest{RootKeyMeta: rk.Meta})
	if err != nil {
		return nil, 0, err
	}
	meta, err := s.fsm.State().RootKeyMetaByID(nil, rk.Meta.KeyID)
	return meta, index, err
}

// rekeyVariables re-encrypts every variable not sealed with the active
// key, rekeyBatch per Raft entry. A variable written meanwhile is
// skipped by the FSM (its new value already uses the active key).
func (s *Server) rekeyVariables(ctx context.Context) (uint64, error) {
	st := s.fsm.State()
	meta, key, err := s.activeKey(st)
	if err != nil {
		return 0, err
	}
	all, err := st.Variables(nil, "*", "")
	if err != nil {
		return 0, err
	}
	var last uint64
	batch := make([]*structs.VariableEncrypted, 0, rekeyBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		idx, _, err := s.raftApply(structs.VariablesRekeyRequestType, &structs.VariablesRekeyRequest{Vars: batch})
		last = idx
		batch = batch[:0]
		return err
	}
	for _, v := range all {
		if v.KeyID == meta.KeyID {
			continue
		}
		if err := ctx.Err(); err != nil {
			return last, err
		}
		plain, err := s.decryptVariable(v)
		if err != nil {
			return last, err
		}
		data, err := key.seal(v.Namespace, v.Path, plain.Items)
		if err != nil {
			return last, err
		}
		batch = append(batch, &structs.VariableEncrypted{VariableMetadata: v.VariableMetadata, Data: data, KeyID: meta.KeyID})
		if len(batch) == rekeyBatch {
			if err := flush(); err != nil {
				return last, err
			}
		}
	}
	return last, flush()
}

// keyringHook makes the cluster's first root key when a leader finds
// none.
type keyringHook struct{}

func (keyringHook) Name() string { return "keyring" }

func (keyringHook) Establish(s *Server) error {
	if _, err := s.fsm.State().ActiveRootKeyMeta(nil); structs.CodeOf(err) != structs.ErrCodeNotFound {
		return err
	}
	meta, _, err := s.newActiveKey()
	if err != nil {
		// Variables are refused until a leader makes the key.
		s.logger.Error("failed to initialize the keyring", "error", err)
		return nil
	}
	s.logger.Info("keyring initialized", "key_id", meta.KeyID)
	return nil
}

func (keyringHook) Revoke(*Server) error { return nil }

// replicateKeys runs on every server until shutdown: whenever the root
// keys' table holds a key this server lacks, it fetches the material
// (retrying with backoff while no server answers).
func (s *Server) replicateKeys() {
	defer s.wg.Done()
	b := backoff.New(100*time.Millisecond, 10*time.Second)
	for !s.isShutdown() {
		st := s.fsm.State()
		ws := memdb.NewWatchSet()
		keys, err := st.RootKeyMetas(ws)
		missing := err != nil
		for _, k := range keys {
			if _, ok := s.keystore.get(k.KeyID); ok {
				continue
			}
			if _, err := s.ensureKey(k.KeyID); err != nil {
				s.logger.Debug("root key not fetched yet", "key_id", k.KeyID, "error", err)
				missing = true
			}
		}
		if missing {
			if b.Wait(s.shutdownCtx) != nil {
				return
			}
			continue
		}
		b.Reset()
		ws.Add(st.AbandonCh())
		_ = ws.WatchCtx(s.shutdownCtx)
	}
}

// Keyring is the keyring endpoint: list and rotate (management tokens),
// and Get, the servers' fetch of a key's material (servers only: the
// cluster secret, and a server certificate where TLS verifies roles).
type Keyring struct {
	srv *Server
}

// ListRootKeyMeta lists the keys' metadata.
func (k *Keyring) ListRootKeyMeta(args *structs.KeyringListRootKeyMetaRequest, reply *structs.KeyringListRootKeyMetaResponse) error {
	s := k.srv
	if done, err := s.forward("Keyring.ListRootKeyMeta", args, args, reply); done {
		return err
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		keys, err := st.RootKeyMetas(ws)
		if err != nil {
			return 0, err
		}
		reply.Keys = keys
		return st.Index(state.TableRootKeys)
	})
}

// Rotate makes a new active key; with Full, it then re-encrypts every
// variable with it before answering.
func (k *Keyring) Rotate(args *structs.KeyringRotateRootKeyRequest, reply *structs.KeyringRotateRootKeyResponse) error {
	s := k.srv
	if done, err := s.forward("Keyring.Rotate", args, args, reply); done {
		return err
	}
	if args.Algorithm != "" && args.Algorithm != structs.EncryptionAlgorithmAES256GCM {
		return structs.NewError(structs.ErrCodeInvalid, "Drover does not support the encryption algorithm %q (only %s)", args.Algorithm, structs.EncryptionAlgorithmAES256GCM)
	}
	meta, index, err := s.newActiveKey()
	if err != nil {
		return err
	}
	reply.Key, reply.Index = meta, index
	if args.Full {
		last, err := s.rekeyVariables(s.shutdownCtx)
		if err != nil {
			return fmt.Errorf("key %s is active, but re-encrypting the variables failed (rotate again with -full): %w", meta.KeyID, err)
		}
		reply.Index = max(reply.Index, last)
	}
	return nil
}

// Get gives another server a key's material. It is answered from this
// server's keystore, never forwarded.
func (k *Keyring) Get(args *structs.KeyringGetRootKeyRequest, reply *structs.KeyringGetRootKeyResponse) error {
	s := k.srv
	meta, err := s.fsm.State().RootKeyMetaByID(nil, args.KeyID)
	if err != nil {
		return err
	}
	e, ok := s.keystore.get(args.KeyID)
	if !ok {
		return structs.NewError(structs.ErrCodeNotFound, "root key %s is not in this server's keystore", args.KeyID)
	}
	m := *meta
	reply.Key = &structs.RootKey{Meta: &m, Key: e.key}
	reply.Index = meta.ModifyIndex
	return nil
}
