package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/structs"
)

// Workload identities. Each task of an allocation may get a token (a JWT,
// HS256) that names its namespace, job, allocation and task, signed with
// a key derived from the active root key (rootKeyEntry.signKey; the JWT
// header's kid names the root key). The token is a credential: resolved
// by resolveToken, it grants read and list on the variables at
// nomad/jobs/<job>, nomad/jobs/<job>/<group> and
// nomad/jobs/<job>/<group>/<task> of its namespace, and reading services
// there (Nomad's implicit policy), for as long as its allocation exists
// and has not finished on its client. Client agents fetch their tasks'
// tokens with Alloc.SignIdentities, for allocations on their own node.

// workloadAudience is the tokens' aud claim (Nomad's default identity's).
const workloadAudience = "nomad.io"

var b64 = base64.RawURLEncoding

type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// looksLikeJWT reports whether a secret has a JWT's shape (three
// base64url parts, a JSON header), as opposed to a UUID secret.
func looksLikeJWT(secret string) bool {
	return strings.HasPrefix(secret, "eyJ") && strings.Count(secret, ".") == 2
}

// signIdentity makes the token of task in alloc with the active key.
func (s *Server) signIdentity(alloc *structs.Allocation, task string) (string, error) {
	meta, key, err := s.activeKey(s.fsm.State())
	if err != nil {
		return "", err
	}
	now := time.Now().Unix()
	claims := structs.WorkloadIdentityClaims{Namespace: alloc.Namespace, JobID: alloc.JobID,
		AllocationID: alloc.ID, Task: task, Audience: workloadAudience, IssuedAt: now, NotBefore: now,
		Subject: strings.Join([]string{s.config.Region, alloc.Namespace, alloc.JobID, alloc.TaskGroup, task, "default"}, ":")}
	h, err := json.Marshal(jwtHeader{Alg: "HS256", Kid: meta.KeyID, Typ: "JWT"})
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	mac := hmac.New(sha256.New, key.signKey)
	mac.Write([]byte(signed))
	return signed + "." + b64.EncodeToString(mac.Sum(nil)), nil
}

// errBadIdentity refuses a token that is not a valid workload identity.
var errBadIdentity = structs.NewError(structs.ErrCodeTokenNotFound, "ACL token not found (invalid workload identity)")

// resolveWorkloadIdentity checks a workload identity token against this
// server's keys and state and returns what it may do.
func (s *Server) resolveWorkloadIdentity(token string) (*aclIdentity, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errBadIdentity
	}
	hb, err1 := b64.DecodeString(parts[0])
	cb, err2 := b64.DecodeString(parts[1])
	sig, err3 := b64.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, errBadIdentity
	}
	var h jwtHeader
	if json.Unmarshal(hb, &h) != nil || h.Alg != "HS256" || h.Kid == "" {
		return nil, errBadIdentity
	}
	if _, err := s.fsm.State().RootKeyMetaByID(nil, h.Kid); err != nil {
		return nil, errBadIdentity
	}
	key, err := s.ensureKey(h.Kid)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, key.signKey)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return nil, errBadIdentity
	}
	var c structs.WorkloadIdentityClaims
	if json.Unmarshal(cb, &c) != nil {
		return nil, errBadIdentity
	}
	alloc, err := s.fsm.State().AllocByID(nil, c.AllocationID)
	if err != nil || alloc == nil || alloc.ClientTerminalStatus() ||
		alloc.Namespace != c.Namespace || alloc.JobID != c.JobID {
		return nil, errBadIdentity
	}
	base := "nomad/jobs/" + c.JobID
	paths := []string{base, base + "/" + alloc.TaskGroup, base + "/" + alloc.TaskGroup + "/" + c.Task}
	return &aclIdentity{acl: acl.NewWorkload(c.Namespace, paths), claims: &c}, nil
}

// SignIdentities gives a client agent the workload identities of tasks of
// an allocation placed on its node. The node's secret is checked here
// (the ACL rule passes unknown secrets on).
func (a *Alloc) SignIdentities(args *structs.AllocIdentitiesRequest, reply *structs.AllocIdentitiesResponse) error {
	s := a.srv
	if done, err := s.forward("Alloc.SignIdentities", args, args, reply); done {
		return err
	}
	st := s.fsm.State()
	node, err := st.NodeByID(nil, args.NodeID)
	if err != nil || node == nil || args.SecretID == "" || node.SecretID != args.SecretID {
		return errNodeSecret(args.NodeID)
	}
	alloc, err := st.AllocByID(nil, args.AllocID)
	if err != nil || alloc == nil || alloc.NodeID != args.NodeID {
		return structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on node %q", args.AllocID, args.NodeID)
	}
	if alloc.ClientTerminalStatus() {
		return structs.NewError(structs.ErrCodeInvalid, "allocation %q has finished: no identity", args.AllocID)
	}
	var tg *structs.TaskGroup
	if alloc.Job != nil {
		tg = alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	}
	reply.Identities = make([]*structs.SignedWorkloadIdentity, 0, len(args.Tasks))
	for _, task := range args.Tasks {
		if tg == nil || tg.LookupTask(task) == nil {
			return structs.NewError(structs.ErrCodeNotFound, "allocation %q has no task %q", args.AllocID, task)
		}
		jwt, err := s.signIdentity(alloc, task)
		if err != nil {
			return err
		}
		reply.Identities = append(reply.Identities, &structs.SignedWorkloadIdentity{Task: task, JWT: jwt})
	}
	reply.Index = alloc.ModifyIndex
	return nil
}
