package fsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// bufferSink is an in-memory raft.SnapshotSink.
type bufferSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *bufferSink) ID() string    { return "test" }
func (s *bufferSink) Close() error  { s.closed = true; return nil }
func (s *bufferSink) Cancel() error { s.cancelled = true; return nil }

// populate fills store through its write methods: jobs jobs, nodes nodes
// and allocsPerJob allocations per job, with evals, a second job version,
// stops, client updates and node events, so every table and record kind
// is exercised. It returns the next free index.
func populate(t testing.TB, store *state.StateStore, jobs, nodes, allocsPerJob int) uint64 {
	t.Helper()
	index := uint64(1)
	next := func() uint64 { index++; return index }
	ns := make([]*structs.Node, nodes)
	for i := range ns {
		ns[i] = mock.Node()
		ns[i].Events = []*structs.NodeEvent{{Message: "Node registered", Subsystem: "Cluster",
			Timestamp: time.Unix(1700000000, 0).UTC()}}
		must(t, store.UpsertNode(next(), ns[i], nil))
	}
	if nodes > 1 {
		must(t, store.UpdateNodeDrain(next(), &structs.NodeUpdateDrainRequest{NodeID: ns[0].ID,
			DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour, StartedAt: time.Unix(1700000001, 0).UTC()}}))
		must(t, store.UpdateNodeStatus(next(), ns[1].ID, structs.NodeStatusDown, 1700000002, nil, nil))
	}
	for j := 0; j < jobs; j++ {
		job := mock.Job()
		if j%3 == 1 {
			job = mock.BatchJob()
		}
		eval := mock.EvalFor(job)
		must(t, store.UpsertJob(next(), job, eval))
		stored, err := store.JobByID(nil, job.Namespace, job.ID)
		must(t, err)
		placed := make([]*structs.Allocation, allocsPerJob)
		for k := range placed {
			a := mock.Alloc(stored, ns[(j*allocsPerJob+k)%nodes])
			a.Job = nil
			a.EvalID = eval.ID
			placed[k] = a
		}
		done := eval.Copy()
		done.Status = structs.EvalStatusComplete
		done.QueuedAllocations = map[string]int{"web": 0}
		must(t, store.UpsertPlanResults(next(), &structs.ApplyPlanResultsRequest{
			Job: stored, AllocsUpdated: placed, EvalID: eval.ID, Evals: []*structs.Evaluation{done}, UpdatedAt: 1700000003}))
		// Service registrations of every allocation (those on the down
		// node are skipped by the store); the stop below removes one.
		regs := make([]*structs.ServiceRegistration, 0, len(placed))
		for _, a := range placed {
			regs = append(regs, &structs.ServiceRegistration{
				ID: structs.ServiceRegistrationID(a.ID, "web", "web", "web-svc", "http"), ServiceName: "web-svc",
				Namespace: a.Namespace, NodeID: a.NodeID, Datacenter: "dc1", JobID: a.JobID, AllocID: a.ID,
				Tags: []string{"v1"}, Address: "10.0.0.1", Port: 20000 + k(a)})
		}
		must(t, store.UpsertServiceRegistrations(next(), regs))
		if j%10 == 0 && allocsPerJob > 1 {
			// A new version while old allocations still run it, then a
			// stop and a client update.
			v2 := stored.Copy()
			v2.Meta = map[string]string{"version": "2"}
			must(t, store.UpsertJob(next(), v2, nil))
			must(t, store.UpdateJobStability(next(), stored.Namespace, stored.ID, stored.Version, true))
			n := int64(2)
			must(t, store.UpsertScalingEvent(next(), &structs.ScalingEventRegisterRequest{JobID: stored.ID,
				TaskGroup: stored.TaskGroups[0].Name, WriteRequest: structs.WriteRequest{Namespace: stored.Namespace},
				Event: &structs.ScalingEvent{Time: 1700000005, Count: &n, PreviousCount: 1, Message: "by test",
					Meta: map[string]any{"k": "v"}}}))
			must(t, store.UpsertPlanResults(next(), &structs.ApplyPlanResultsRequest{
				AllocsStopped: []*structs.Allocation{{ID: placed[0].ID, DesiredStatus: structs.AllocDesiredStatusStop,
					DesiredDescription: "alloc is being updated"}}}))
			must(t, store.UpdateAllocsFromClient(next(), []*structs.Allocation{{ID: placed[1].ID,
				ClientStatus: structs.AllocClientStatusRunning, TaskStates: structs.NewTaskStates(map[string]*structs.TaskState{
					"web": {State: structs.TaskStateRunning, StartedAt: time.Unix(1700000004, 0).UTC(),
						Events: []*structs.TaskEvent{{Type: structs.TaskStarted, Time: 1700000004, Details: map[string]string{"a": "b"}}}}})}}, nil))
			// A deployment of v2 with a canary placed by a plan, then
			// reported healthy by its client.
			dep := structs.NewDeployment(v2, time.Unix(1700000006, 0))
			dep.TaskGroups["web"] = &structs.DeploymentState{AutoRevert: true, ProgressDeadline: 10 * time.Minute,
				DesiredCanaries: 1, DesiredTotal: len(placed)}
			canary := mock.Alloc(v2, ns[(j+1)%nodes])
			canary.Job, canary.EvalID, canary.DeploymentID = nil, eval.ID, dep.ID
			canary.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
			dep.TaskGroups["web"].PlacedCanaries = []string{canary.ID}
			must(t, store.UpsertPlanResults(next(), &structs.ApplyPlanResultsRequest{Job: v2, AllocsUpdated: []*structs.Allocation{canary},
				Deployment: dep, EvalID: eval.ID, UpdatedAt: 1700000006}))
			healthy := true
			must(t, store.UpdateAllocsFromClient(next(), []*structs.Allocation{{ID: canary.ID, ClientStatus: structs.AllocClientStatusRunning,
				DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Unix(1700000007, 0).UTC()}}}, nil))
		}
	}
	// Two root keys (the second active) and variables in two namespaces.
	must(t, store.UpsertRootKeyMeta(next(), &structs.RootKeyMeta{KeyID: "k1", Algorithm: structs.EncryptionAlgorithmAES256GCM, CreateTime: 1}))
	must(t, store.UpsertRootKeyMeta(next(), &structs.RootKeyMeta{KeyID: "k2", Algorithm: structs.EncryptionAlgorithmAES256GCM, CreateTime: 2}))
	for i, ns := range []string{"default", "prod", "default"} {
		err := store.ApplyVariable(next(), &structs.VarApplyStateRequest{Op: structs.VarOpSet, Var: &structs.VariableEncrypted{
			VariableMetadata: structs.VariableMetadata{Namespace: ns, Path: fmt.Sprintf("nomad/jobs/j%d", i), CreateTime: 5, ModifyTime: 6},
			Data:             []byte{1, 2, 3, byte(i)}, KeyID: "k2"}})
		must(t, err)
	}
	if jobs > 0 {
		// A periodic job with one launch: the periodic index and the
		// periodic_launch table.
		parent := mock.BatchJob()
		parent.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: "*/5 * * * *", SpecType: structs.PeriodicSpecCron, TimeZone: "UTC"}
		must(t, store.UpsertJob(next(), parent, nil))
		launchAt := time.Unix(1700000100, 0).UTC()
		child := parent.Copy()
		child.ID, child.ParentID, child.Periodic = structs.PeriodicChildID(parent.ID, launchAt), parent.ID, nil
		must(t, store.LaunchPeriodicJob(next(), child, mock.EvalFor(child),
			&structs.PeriodicLaunch{Namespace: parent.Namespace, ID: parent.ID, Launch: launchAt}))
		// A scheduler configuration set by an operator.
		must(t, store.SetSchedulerConfig(next(), &structs.SchedulerConfiguration{SchedulerAlgorithm: structs.SchedulerAlgorithmSpread,
			PreemptionConfig: structs.PreemptionConfig{ServiceSchedulerEnabled: true}}, false))
		must(t, store.UpsertNodePools(next(), []*structs.NodePool{{Name: "gpu", Description: "GPUs", Meta: map[string]string{"a": "b"}}}))
		// A quarantined node (node_quarantine table).
		if qn, err := store.Nodes(nil); err == nil && len(qn) > 0 {
			at := time.Unix(1700000200, 0).UTC()
			must(t, store.UpdateNodeQuarantine(next(), &structs.NodeQuarantineUpdateRequest{
				Quarantine: &structs.NodeQuarantine{NodeID: qn[0].ID, Quarantined: true, Since: at, ProbeAt: at.Add(15 * time.Minute),
					Reason: "3 node faults", Faults: []*structs.NodeFault{{NodeID: qn[0].ID, Kind: structs.NodeFaultSetup, AllocID: "a1", Time: at}}},
				Eligibility: structs.NodeSchedulingIneligible,
				NodeEvent:   &structs.NodeEvent{Message: "Node quarantined", Subsystem: "Quarantine", Timestamp: at},
			}))
		}
		// An autoscaling pool with an instance and events (one a quota
		// back-off).
		asg := &structs.PoolAutoscaler{Pool: "gpu", Enabled: true, Provider: "local", Max: 3,
			InstanceTypes: []*structs.InstanceType{{Name: "small", CPU: 1000, MemoryMB: 512, PricePerHour: 0.25}}}
		asg.Canonicalize()
		must(t, store.UpsertPoolAutoscaler(next(), &structs.PoolAutoscalerUpsertRequest{Autoscaler: asg}))
		must(t, store.UpdatePoolInstances(next(), &structs.PoolInstanceUpdateRequest{
			Instances: []*structs.PoolInstance{{ID: "i-1", Pool: "gpu", Type: "small", ProviderType: "small", PricePerHour: 0.25,
				State: structs.InstanceBooting, CreateTime: 1700000010}},
			Events: []*structs.PoolEvent{{Pool: "gpu", Time: 1700000010, Type: structs.PoolEventCreate, InstanceID: "i-1", Message: "queue"},
				{Pool: "gpu", Time: 1700000011, Type: structs.PoolEventQuota, Message: "quota", QuotaBackoffUntil: 1700000071}}}))
		must(t, store.SetPoolInstanceBehavior(next(), &structs.PoolInstanceBehaviorRequest{InstanceID: "i-1", Behavior: structs.InstanceBehaviorHold, Time: 1700000012}))
	}
	return index
}

// k is a small number from an allocation's ID, for sample ports.
func k(a *structs.Allocation) int { return int(a.ID[0]) }

// tables reads every table of s.
func tables(s *state.StateStore) (map[string]any, error) {
	out := map[string]any{}
	var err error
	read := func(name string, v any, e error) {
		out[name] = v
		if e != nil {
			err = e
		}
	}
	v1, e := s.Indexes()
	read(state.TableIndex, v1, e)
	v2, e := s.Jobs(nil)
	read(state.TableJobs, v2, e)
	v3, e := s.JobSummaries(nil)
	read(state.TableJobSummary, v3, e)
	v4, e := s.Nodes(nil)
	read(state.TableNodes, v4, e)
	v5, e := s.Evals(nil)
	read(state.TableEvals, v5, e)
	v6, e := s.Allocs(nil)
	read(state.TableAllocs, v6, e)
	v7, e := s.ACLPolicies(nil, "")
	read(state.TableACLPolicies, v7, e)
	v8, e := s.ACLTokens(nil, "")
	read(state.TableACLTokens, v8, e)
	var v9 []*structs.ACLClusterSecret
	if c, e := s.ACLClusterSecret(); c != nil || e != nil {
		v9 = append(v9, c)
		err = errors.Join(err, e)
	}
	out[state.TableACLCluster] = v9
	v10, e := s.Variables(nil, "*", "")
	read(state.TableVariables, v10, e)
	v11, e := s.RootKeyMetas(nil)
	read(state.TableRootKeys, v11, e)
	v12, e := s.ServiceRegistrations(nil)
	read(state.TableServiceRegs, v12, e)
	v13, e := s.JobVersions(nil)
	read(state.TableJobVersions, v13, e)
	v14, e := s.ScalingEvents(nil)
	read(state.TableScalingEvents, v14, e)
	v15, e := s.PeriodicLaunches(nil)
	read(state.TablePeriodicLaunch, v15, e)
	var v16 []*structs.SchedulerConfiguration
	if c, e := s.StoredSchedulerConfig(); c != nil || e != nil {
		v16 = append(v16, c)
		err = errors.Join(err, e)
	}
	out[state.TableSchedulerConfig] = v16
	v17, e := s.StoredNodePools(nil)
	read(state.TableNodePools, v17, e)
	v18, e := s.Deployments(nil)
	read(state.TableDeployments, v18, e)
	v19, e := s.NodeQuarantines(nil)
	read(state.TableNodeQuarantine, v19, e)
	v20, e := s.PoolAutoscalers(nil)
	read(state.TablePoolAutoscalers, v20, e)
	v21, e := s.PoolInstances(nil, "")
	read(state.TablePoolInstances, v21, e)
	v22, e := s.PoolAutoscaleStatuses(nil)
	read(state.TablePoolAutoscaleStats, v22, e)
	return out, err
}

// diffState describes the first difference between the rows of a and b,
// or returns nil when every table holds equal rows.
func diffState(a, b *state.StateStore) error {
	ta, err := tables(a)
	if err != nil {
		return err
	}
	tb, err := tables(b)
	if err != nil {
		return err
	}
	for _, name := range state.Tables {
		va, vb := reflect.ValueOf(ta[name]), reflect.ValueOf(tb[name])
		if va.Len() != vb.Len() {
			return fmt.Errorf("table %s: %d rows vs %d", name, va.Len(), vb.Len())
		}
		for i := 0; i < va.Len(); i++ {
			if !reflect.DeepEqual(va.Index(i).Interface(), vb.Index(i).Interface()) {
				return fmt.Errorf("table %s row %d differs:\n%+v\n%+v", name, i, va.Index(i).Elem().Interface(), vb.Index(i).Elem().Interface())
			}
		}
	}
	return nil
}

// sameState fails unless a and b hold equal rows in every table.
func sameState(t testing.TB, a, b *state.StateStore) {
	t.Helper()
	if err := diffState(a, b); err != nil {
		t.Fatal(err)
	}
}

func persist(t testing.TB, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	must(t, err)
	defer snap.Release()
	sink := &bufferSink{}
	must(t, snap.Persist(sink))
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

func TestSnapshotRestoreLarge(t *testing.T) {
	jobs, nodes, perJob := 10000, 1000, 5
	if testing.Short() || raceEnabled {
		// The race detector makes the full size take half a minute; the
		// smaller state runs the same code paths.
		jobs, nodes = 1000, 100
	}
	src, _ := testFSM(t)
	populate(t, src.State(), jobs, nodes, perJob)
	data := persist(t, src)

	dst, _ := testFSM(t)
	old := dst.State()
	must(t, dst.Restore(io.NopCloser(bytes.NewReader(data))))
	if dst.State() == old {
		t.Fatal("restore did not replace the store")
	}
	select {
	case <-old.AbandonCh():
	default:
		t.Fatal("old store not abandoned")
	}
	sameState(t, src.State(), dst.State())

	// Job objects are shared exactly as before: allocations that pointed
	// at one job object still do, and at no other allocation's.
	srcAllocs, err := src.State().Allocs(nil)
	must(t, err)
	dstAllocs, err := dst.State().Allocs(nil)
	must(t, err)
	// populate places a canary for every tenth job.
	if want := jobs*perJob + (jobs+9)/10; len(dstAllocs) != want {
		t.Fatalf("%d allocs, want %d", len(dstAllocs), want)
	}
	fwd := map[*structs.Job]*structs.Job{}
	back := map[*structs.Job]*structs.Job{}
	for i, a := range srcAllocs {
		b := dstAllocs[i]
		if p, ok := fwd[a.Job]; ok && p != b.Job {
			t.Fatalf("alloc %s: sharing of its job object lost", a.ID)
		}
		if p, ok := back[b.Job]; ok && p != a.Job {
			t.Fatalf("alloc %s: shares a job object it did not share before", a.ID)
		}
		fwd[a.Job], back[b.Job] = b.Job, a.Job
	}
	if len(fwd) >= len(srcAllocs)/2 {
		t.Fatalf("%d job objects for %d allocs: the test data shares too little", len(fwd), len(srcAllocs))
	}

	// Each job's current version is its jobs-table object again, and the
	// older, stable versions came back as they were.
	restoredJobs, err := dst.State().Jobs(nil)
	must(t, err)
	history := 0
	for _, j := range restoredJobs {
		v, err := dst.State().JobByIDAndVersion(nil, j.Namespace, j.ID, j.Version)
		must(t, err)
		if v != j {
			t.Fatalf("job %s: current version row is a copy", j.ID)
		}
		all, err := dst.State().JobVersionsByID(nil, j.Namespace, j.ID)
		must(t, err)
		if len(all) > 1 {
			history++
			if !all[1].Stable {
				t.Fatalf("job %s: version %d lost its Stable flag", j.ID, all[1].Version)
			}
		}
	}
	if history == 0 {
		t.Fatal("no job with history in the test data")
	}
}

// A store with a configured limit keeps it across a restore.
func TestRestoreKeepsTrackedVersions(t *testing.T) {
	src, _ := testFSM(t)
	populate(t, src.State(), 3, 2, 2)
	dst, err := New(Config{JobTrackedVersions: 2})
	must(t, err)
	must(t, dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))))
	if got := dst.State().JobTrackedVersions(); got != 2 {
		t.Fatalf("restored store keeps %d versions, want 2", got)
	}
}

func TestSnapshotEmptyState(t *testing.T) {
	src, _ := testFSM(t)
	data := persist(t, src)
	store, err := ReadSnapshot(bytes.NewReader(data))
	must(t, err)
	sameState(t, src.State(), store)
}

func TestSnapshotRefusesDamage(t *testing.T) {
	src, _ := testFSM(t)
	populate(t, src.State(), 50, 10, 3)
	data := persist(t, src)
	n := len(data)

	type damage struct {
		name string
		data []byte
	}
	var cases []damage
	for _, cut := range []int{0, 1, 5, 17, 40, n / 3, n / 2, n - 10, n - 5, n - 4, n - 1} {
		cases = append(cases, damage{fmt.Sprintf("truncated at %d of %d", cut, n), append([]byte(nil), data[:cut]...)})
	}
	for _, pos := range []int{0, 3, 20, 100, n / 4, n / 2, 3 * n / 4, n - 6, n - 5, n - 2} {
		d := append([]byte(nil), data...)
		d[pos] ^= 0x5a
		cases = append(cases, damage{fmt.Sprintf("byte %d flipped", pos), d})
	}
	cases = append(cases, damage{"trailing garbage", append(append([]byte(nil), data...), 1, 2, 3)})
	cases = append(cases, damage{"garbage", bytes.Repeat([]byte("drover"), 1000)})

	dst, _ := testFSM(t)
	before := populate(t, dst.State(), 3, 2, 2)
	want := dst.State()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := dst.Restore(io.NopCloser(bytes.NewReader(tc.data)))
			if err == nil {
				t.Fatal("damaged snapshot accepted")
			}
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error %v does not wrap ErrCorruptSnapshot", err)
			}
			if dst.State() != want {
				t.Fatal("a refused restore replaced the store")
			}
			select {
			case <-want.AbandonCh():
				t.Fatal("a refused restore abandoned the store")
			default:
			}
			if latest, _ := want.LatestIndex(); latest != before {
				t.Fatalf("state changed: latest index %d, want %d", latest, before)
			}
		})
	}
	// The undamaged snapshot still restores.
	must(t, dst.Restore(io.NopCloser(bytes.NewReader(data))))
	sameState(t, src.State(), dst.State())
}

func TestSnapshotVersionCheck(t *testing.T) {
	var buf bytes.Buffer
	hdr := snapshotHeader{Magic: snapshotMagic, FormatVersion: snapshotFormatVersion + 1}
	buf.Write(mustEncode(t, &hdr))
	buf.Write(make([]byte, 16))
	_, err := ReadSnapshot(&buf)
	if !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("future format version accepted: %v", err)
	}
}

func mustEncode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := structs.Encode(0, v)
	must(t, err)
	return b[1:]
}

// failingSink fails every write after limit bytes.
type failingSink struct {
	bufferSink
	limit int
}

func (s *failingSink) Write(p []byte) (int, error) {
	if s.Len()+len(p) > s.limit {
		return 0, errors.New("disk full")
	}
	return s.bufferSink.Write(p)
}

func TestPersistCancelsOnError(t *testing.T) {
	f, _ := testFSM(t)
	populate(t, f.State(), 20, 5, 2)
	snap, err := f.Snapshot()
	must(t, err)
	sink := &failingSink{limit: 100}
	if err := snap.Persist(sink); err == nil {
		t.Fatal("persist to a failing sink succeeded")
	}
	if !sink.cancelled || sink.closed {
		t.Fatalf("sink cancelled=%v closed=%v", sink.cancelled, sink.closed)
	}
}

func TestSnapshotIsPointInTime(t *testing.T) {
	f, _ := testFSM(t)
	idx := populate(t, f.State(), 5, 2, 2)
	snap, err := f.Snapshot()
	must(t, err)
	want, err := tables(f.State())
	must(t, err)
	// Writes after Snapshot() must not appear in what Persist writes.
	must(t, f.State().UpsertNode(idx+1, mock.Node(), nil))
	sink := &bufferSink{}
	must(t, snap.Persist(sink))
	restored, err := ReadSnapshot(bytes.NewReader(sink.Bytes()))
	must(t, err)
	if got, err := tables(restored); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatal("persisted snapshot includes a later write")
	}
}

func TestBlockingQueryAcrossRestore(t *testing.T) {
	src, _ := testFSM(t)
	node := mock.Node()
	must(t, src.State().UpsertNode(50, node, nil))
	data := persist(t, src)

	f, _ := testFSM(t)
	must(t, f.State().UpsertNode(5, mock.Node(), nil))
	started := make(chan struct{}, 2)
	type result struct {
		err   error
		found bool
	}
	done := make(chan result, 1)
	go func() {
		var res result
		res.err = f.State().BlockingQuery(context.Background(), 5, time.Minute,
			func(ws memdb.WatchSet, s *state.StateStore) (uint64, error) {
				defer func() { started <- struct{}{} }()
				_, err := s.NodeByID(ws, node.ID)
				res.found = err == nil
				return s.Index(state.TableNodes)
			})
		done <- res
	}()
	<-started
	must(t, f.Restore(io.NopCloser(bytes.NewReader(data))))
	select {
	case res := <-done:
		if res.err != nil || !res.found {
			t.Fatalf("after restore: err %v, found %v", res.err, res.found)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query did not wake on restore")
	}
}

// failingReader returns its data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadSnapshotReaderError(t *testing.T) {
	src, _ := testFSM(t)
	populate(t, src.State(), 20, 5, 2)
	data := persist(t, src)
	boom := errors.New("connection reset")
	_, err := ReadSnapshot(&failingReader{data: data[:len(data)/2], err: boom})
	if !errors.Is(err, boom) || errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("got %v, want the reader's error, not a corruption", err)
	}
}

// gcPercentReader records the collector's target percentage when it is
// first read, then serves r.
type gcPercentReader struct {
	r    io.Reader
	seen *int
}

func (g gcPercentReader) Read(p []byte) (int, error) {
	if *g.seen == 0 {
		cur := debug.SetGCPercent(-1)
		debug.SetGCPercent(cur)
		*g.seen = cur
	}
	return g.r.Read(p)
}

func TestRestoreDefersGC(t *testing.T) {
	src, _ := testFSM(t)
	populate(t, src.State(), 3, 2, 1)
	data := persist(t, src)
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	cases := []struct {
		name             string
		initial, setting int
		wantDuring       int
	}{
		{"raised", 100, 0, DefaultRestoreGCPercent},
		{"custom", 100, 300, 300},
		{"already higher", 800, 0, 800},
		{"collector off", -1, 0, -1},
		{"opted out", 100, -1, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(Config{RestoreGCPercent: tc.setting})
			must(t, err)
			debug.SetGCPercent(tc.initial)
			var during int
			must(t, f.Restore(io.NopCloser(gcPercentReader{r: bytes.NewReader(data), seen: &during})))
			after := debug.SetGCPercent(100)
			if during != tc.wantDuring || after != tc.initial {
				t.Fatalf("GC percent during restore %d, after %d; want %d, %d", during, after, tc.wantDuring, tc.initial)
			}
			sameState(t, src.State(), f.State())
		})
	}
}
