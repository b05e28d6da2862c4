package structs

import (
	"bytes"
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// wireTypes are the types that cross Raft, RPC or snapshots in msgpack:
// each has generated code (structs.generated.go) and is round-tripped
// with random content below.
var wireTypes = []any{
	// Raft entries and what they carry.
	// Networks and ports (structs/network.go).
	new(NetworkResource), new(DNSConfig), new(Port), new(AllocatedPortMapping),
	new(NodeNetworkResource), new(NodeNetworkAddress), new(NodeReservedNetworkResources),
	new(NodeRegisterRequest), new(NodeDeregisterRequest), new(NodeUpdateStatusRequest),
	new(NodeUpdateDrainRequest), new(NodeUpdateEligibilityRequest), new(JobRegisterRequest),
	new(JobDeregisterRequest), new(EvalUpdateRequest), new(EvalDeleteRequest),
	new(AllocUpdateRequest), new(ApplyPlanResultsRequest), new(AllocUpdateDesiredTransitionRequest),
	new(Job), new(TaskGroup), new(Task), new(Resources), new(Constraint), new(RestartPolicy),
	new(ReschedulePolicy), new(MigrateStrategy), new(UpdateStrategy), new(JobSummary), new(JobChildrenSummary),
	new(TaskGroupSummary), new(Node), new(NodeResources), new(NodeCpuResources),
	new(NodeMemoryResources), new(NodeDiskResources), new(NodeReservedResources),
	new(NodeReservedCpuResources), new(NodeReservedMemoryResources), new(NodeReservedDiskResources),
	new(DriverInfo), new(DrainStrategy), new(NodeEvent), new(NodeReadiness), new(Evaluation), new(EvaluationStub),
	new(Allocation), new(AllocGroup), new(AllocatedResources), new(AllocatedTaskResources), new(AllocatedCpuResources),
	new(AllocatedMemoryResources), new(AllocatedSharedResources), new(DesiredTransition),
	new(RescheduleTracker), new(RescheduleEvent), new(TaskState), new(TaskEvent), new(AllocMetric),
	new(Template), new(ChangeScript), new(WaitConfig), new(TaskArtifact),
	new(NodeScoreMeta), new(TaskStates), new(Affinity), new(Spread), new(SpreadTarget),
	// Services (structs/services.go).
	new(Service), new(ServiceCheck), new(CheckRestart), new(ServiceRegistration), new(CheckQueryResult),
	new(ServiceRegistrationListStub), new(ServiceRegistrationStub), new(ServiceRegistrationUpsertRequest),
	new(ServiceRegistrationDeleteByIDRequest), new(ServiceRegistrationDeleteByAllocIDsRequest),
	new(ServiceRegistrationListRequest), new(ServiceRegistrationListResponse),
	new(ServiceRegistrationByNameRequest), new(ServiceRegistrationByNameResponse),
	new(JobServiceRegistrationsRequest), new(JobServiceRegistrationsResponse),
	new(AllocServiceRegistrationsRequest), new(AllocServiceRegistrationsResponse),
	// RPC requests and responses.
	new(QueryOptions), new(WriteRequest), new(QueryMeta), new(WriteMeta), new(GenericRequest),
	new(GenericResponse), new(JobRegisterResponse), new(JobDeregisterResponse),
	new(JobSpecificRequest), new(SingleJobResponse), new(JobListRequest), new(JobListResponse),
	new(JobListStub), new(NodeUpdateResponse), new(NodeServerInfo), new(NodeSpecificRequest),
	new(SingleNodeResponse), new(NodeListRequest), new(NodeListResponse), new(NodeListStub),
	new(NodeAllocsResponse), new(EvalSpecificRequest), new(SingleEvalResponse),
	new(EvalListRequest), new(EvalListResponse), new(AllocSpecificRequest), new(SingleAllocResponse),
	new(AllocListRequest), new(AllocListResponse), new(AllocListStub), new(RaftServer),
	new(RaftConfigurationResponse), new(RaftPeerRequest), new(RaftIDAddress), new(LeadershipTransferRequest), new(LeadershipTransferResponse), new(ServerMember), new(QueueStatsResponse), new(QueueJobCount),
	new(ServerAnnounceRequest), new(ServerMembersResponse), new(EvalDequeueRequest),
	new(EvalDequeueResponse), new(EvalAckRequest), new(Plan), new(PlanAnnotations),
	new(DesiredUpdates), new(PlanResult), new(PlanRequest), new(PlanResponse),
	new(NodeClientAllocsResponse), new(AllocsGetRequest), new(AllocsGetResponse),
	new(AllocStopRequest), new(AllocStopResponse), new(JobSummaryResponse), new(JobPlanRequest),
	new(JobPlanResponse), new(JobValidateRequest), new(JobValidateResponse), new(JobDiff), new(SnapshotSaveResponse), new(SnapshotRestoreRequest), new(SnapshotUploadRequest), new(SnapshotUploadResponse),
	// Job versions (structs/job_versions.go, structs/diff.go).
	new(TaskGroupDiff), new(TaskDiff), new(ObjectDiff), new(FieldDiff), new(JobVersionsRequest),
	new(JobVersionsResponse), new(JobRevertRequest), new(JobStabilityRequest), new(JobStabilityResponse),
	// Disconnected clients (structs/disconnect.go).
	new(DisconnectStrategy),
	// Scaling (structs/scaling.go).
	new(ScalingPolicy), new(ScalingEvent), new(JobScalingEvents), new(ScalingRequest),
	new(ScalingEventRegisterRequest), new(JobScaleStatusResponse), new(JobScaleStatus), new(TaskGroupScaleStatus),
	new(ScalingPolicyListRequest), new(ScalingPolicyListStub), new(ScalingPolicyListResponse),
	new(ScalingPolicySpecificRequest), new(ScalingPolicyDetail), new(SingleScalingPolicyResponse),
	// ACLs.
	new(ACLPolicy), new(ACLPolicyListStub), new(ACLToken), new(ACLTokenListStub), new(ACLClusterSecret),
	new(ACLPolicyUpsertRequest), new(ACLPolicyDeleteRequest), new(ACLPolicySpecificRequest),
	new(SingleACLPolicyResponse), new(ACLPolicyListRequest), new(ACLPolicyListResponse),
	new(ACLTokenUpsertRequest), new(ACLTokenUpsertResponse), new(ACLTokenBootstrapRequest),
	new(ACLTokenDeleteRequest), new(ACLTokenSpecificRequest), new(SingleACLTokenResponse),
	new(ACLTokenListRequest), new(ACLTokenListResponse), new(ACLResolveResponse), new(ACLClusterSecretRequest), new(ACLClusterSecretRotateRequest),
	// Variables and the keyring.
	new(VariableMetadata), new(VariableEncrypted), new(VariableDecrypted), new(VariablesApplyRequest),
	new(VariablesApplyResponse), new(VarApplyStateRequest), new(VariablesRekeyRequest),
	new(VariablesListRequest), new(VariablesListResponse), new(VariablesReadRequest),
	new(VariablesReadResponse), new(RootKeyMeta), new(RootKey), new(RootKeyMetaUpsertRequest),
	new(KeyringListRootKeyMetaRequest), new(KeyringListRootKeyMetaResponse),
	new(KeyringRotateRootKeyRequest), new(KeyringRotateRootKeyResponse),
	new(KeyringGetRootKeyRequest), new(KeyringGetRootKeyResponse),
	new(AllocIdentitiesRequest), new(SignedWorkloadIdentity), new(AllocIdentitiesResponse), new(WorkloadIdentity),
	// Periodic jobs.
	new(PeriodicConfig), new(PeriodicLaunch), new(PeriodicLaunchRequest), new(PeriodicForceRequest),
	new(SchedulerConfiguration), new(PreemptionConfig), new(SchedulerSetConfigRequest), new(SchedulerConfigurationResponse),
	new(SchedulerSetConfigurationResponse), new(NodePool), new(NodePoolSchedulerConfiguration), new(NodePoolUpsertRequest),
	new(NodePoolDeleteRequest), new(NodePoolSpecificRequest), new(NodePoolListResponse), new(SingleNodePoolResponse),
	new(NodePoolNodesResponse), new(NodePoolJobsResponse),
	// Autoscaling node pools.
	new(PoolAutoscaler), new(InstanceType), new(PoolInstance), new(PoolEvent), new(PoolAutoscaleStatus),
	new(PoolAutoscalerUpsertRequest), new(PoolInstanceUpdateRequest), new(PoolInstanceBehaviorRequest),
	new(PoolAutoscalerResponse), new(PoolInstancesResponse),
	new(PeriodicForceResponse),
	// Deployments (structs/deployment.go, structs/update.go).
	new(Deployment), new(DeploymentState), new(AllocDeploymentStatus), new(DeploymentStatusUpdate),
	new(DeploymentStatusUpdateRequest), new(DeploymentPromoteRequest), new(ApplyDeploymentPromoteRequest),
	new(DeploymentAllocHealthRequest), new(ApplyDeploymentAllocHealthRequest), new(DeploymentPauseRequest),
	new(DeploymentFailRequest), new(DeploymentSpecificRequest), new(DeploymentListRequest),
	new(DeploymentListResponse), new(SingleDeploymentResponse), new(DeploymentUpdateResponse),
	// Parameterized jobs.
	new(ParameterizedJobConfig), new(DispatchPayloadConfig), new(TaskLifecycleConfig), new(JobDispatchRequest), new(JobDispatchResponse),
	// Logs, volumes and disk.
	new(LogConfig), new(VolumeRequest), new(VolumeMount), new(EphemeralDisk), new(ClientHostVolumeConfig),
	// Node faults and quarantine (structs/quarantine.go).
	new(NodeFault), new(NodeQuarantine), new(NodeQuarantineUpdateRequest),
}

// notWireTypes are exported struct types that are never msgpack-encoded
// (scripts/codecgen.sh leaves them out): HTTP bodies, state-only values,
// errors (they cross RPC as text).
var notWireTypes = map[string]bool{
	"Error": true, "FieldError": true, "ValidationError": true, "NodeUsage": true, "NodePorts": true, "AllocPorts": true, // derived state, never sent

	"ComparableResources": true, "NamespacedID": true, "JobRegisterHTTPRequest": true,
	"JobPlanHTTPRequest": true, "JobRevertHTTPRequest": true, "ScalingHTTPRequest": true, "JobStabilityHTTPRequest": true, "JobValidateHTTPRequest": true, "JobsParseHTTPRequest": true, "DrainSpec": true,
	"NodeDrainHTTPRequest": true, "NodeEligibilityHTTPRequest": true,
	"NodeUpdateHTTPResponse": true, "AgentSelf": true, "AgentMember": true,
	"AgentMembersResponse": true, "AgentHealthResponse": true, "AgentHealth": true,
	"AllocIndex":             true,                  // encoded only inside AllocIndexes, a map
	"VarConflictError":       true,                  // an FSM result, in-process only
	"WorkloadIdentityClaims": true,                  // JSON inside a signed token
	"PortUsage":              true, "PortKey": true, // the scheduler's and plan applier's working sets
}

// TestCodecTypesCovered fails when an exported struct type is in neither
// list, or a wire type has no generated code: a new type must be
// classified, and a wire type must be generated (make generate).
func TestCodecTypesCovered(t *testing.T) {
	wire := map[string]bool{}
	for _, v := range wireTypes {
		typ := reflect.TypeOf(v)
		wire[typ.Elem().Name()] = true
		if _, ok := v.(codec.Selfer); !ok {
			t.Errorf("%s has no generated code: run make generate (or list it in notWireTypes and scripts/codecgen.sh)", typ.Elem().Name())
		}
	}
	for _, name := range exportedStructTypes(t) {
		if !wire[name] && !notWireTypes[name] {
			t.Errorf("struct type %s is in neither wireTypes nor notWireTypes (codec_test.go)", name)
		}
	}
}

// exportedStructTypes lists the exported struct types declared in the
// package's non-test, non-generated files.
func exportedStructTypes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, ".generated.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
					if _, ok := ts.Type.(*ast.StructType); ok {
						names = append(names, ts.Name.Name)
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

var writeMissingGolden = flag.Bool("write-missing-golden", false,
	"write the golden file of a Raft message type that has none (never overwrites one)")

// TestCodecGolden decodes entries written by the reflection encoder before
// generated code existed (testdata/codec-golden, one per Raft message
// type) and expects exactly the values they were made from: logs and
// snapshots on disk, and servers not yet upgraded, stay readable. Each
// sample also round-trips through the current encoder.
func TestCodecGolden(t *testing.T) {
	samples := raftSamples()
	have := map[MessageType]bool{}
	for i, s := range samples {
		if i > 0 && s.t <= samples[i-1].t {
			t.Fatalf("sample %d is message type %d: keep raftSamples in type order", i, s.t)
		}
		have[s.t] = true
	}
	// Every named type has a sample; reserved numbers (no name yet) have
	// none.
	for t2 := MessageType(0); t2 < IgnoreUnknownTypeFlag; t2++ {
		if !have[t2] && !strings.HasPrefix(t2.String(), "MessageType(") {
			t.Errorf("message type %s has no sample in raftSamples", t2)
		}
	}
	for _, s := range samples {
		t.Run(s.t.String(), func(t *testing.T) {
			old, err := os.ReadFile(goldenName(s))
			if errors.Is(err, fs.ErrNotExist) && *writeMissingGolden {
				// A new message type: its first encoding becomes its golden.
				buf, err := Encode(s.t, s.msg)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(goldenName(s), buf, 0o644); err != nil {
					t.Fatal(err)
				}
				old = buf
			} else if err != nil {
				t.Fatalf("%v (a new message type? run go test -run TestCodecGolden -write-missing-golden ./structs/)", err)
			}
			if MessageType(old[0]) != s.t {
				t.Fatalf("golden type byte %d, want %d", old[0], s.t)
			}
			got := s.new()
			if err := Decode(old[1:], got); err != nil {
				t.Fatalf("decode golden: %v", err)
			}
			// Task states stay as the golden encoded them (every field,
			// from before the omitempty tags): compare what they hold.
			canonicalTaskStates(reflect.ValueOf(got))
			if !reflect.DeepEqual(got, s.msg) {
				t.Fatalf("golden decodes to a different value:\n got %#v\nwant %#v", got, s.msg)
			}
			buf, err := Encode(s.t, s.msg)
			if err != nil {
				t.Fatal(err)
			}
			again := s.new()
			if err := Decode(buf[1:], again); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again, s.msg) {
				t.Fatalf("round trip differs:\n got %#v\nwant %#v", again, s.msg)
			}
		})
	}
}

// TestCodecRoundTripRandom fills every wire type with random content and
// checks encode then decode (into a fresh value, as every decoder in the
// servers does) gives a deeply equal value. A field the generated code
// does not know (a stale structs.generated.go) is lost and fails here.
//
// Normalizations, all of which the servers rely on already:
//   - times decode in UTC without a monotonic reading (the generator
//     makes UTC times); a zero time stays zero.
//   - values inside map[string]any and []any decode as the generic types
//     (int64, float64, string, bool, []any, map[string]any): the
//     generator uses only those.
//   - a field skipped by its tag (json:"-" without a codec tag, such as
//     Evaluation.LeaderACL) is never encoded; the generator leaves it zero.
//   - a collection field tagged omitempty loses the difference between
//     empty and nil; the generator makes nil or non-empty ones there.
//     Everywhere else an empty slice or map stays empty, not nil.
func TestCodecRoundTripRandom(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 5
	}
	for _, proto := range wireTypes {
		typ := reflect.TypeOf(proto).Elem()
		t.Run(typ.Name(), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(len(typ.Name()))))
			for i := 0; i < rounds; i++ {
				in := reflect.New(typ)
				fillRandom(r, in.Elem(), 0, false)
				var buf bytes.Buffer
				if err := codec.NewEncoder(&buf, MsgpackHandle).Encode(in.Interface()); err != nil {
					t.Fatal(err)
				}
				out := reflect.New(typ)
				if err := Decode(buf.Bytes(), out.Interface()); err != nil {
					t.Fatalf("round %d: %v", i, err)
				}
				if !reflect.DeepEqual(in.Interface(), out.Interface()) {
					t.Fatalf("round %d differs:\n in %#v\nout %#v", i, in.Interface(), out.Interface())
				}
			}
		})
	}
}

const fillMaxDepth = 5

var (
	timeType         = reflect.TypeFor[time.Time]()
	taskStatesType   = reflect.TypeFor[TaskStates]()
	allocIndexesType = reflect.TypeFor[AllocIndexes]()
)

// canonicalTaskStates re-encodes every TaskStates under v with
// NewTaskStates, so that equal task states hold equal bytes whoever
// encoded them.
func canonicalTaskStates(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			canonicalTaskStates(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			canonicalTaskStates(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			canonicalTaskStates(it.Value())
		}
	case reflect.Struct:
		if v.Type() == taskStatesType {
			if v.CanSet() {
				v.Set(reflect.ValueOf(NewTaskStates(v.Interface().(TaskStates).MustMap())))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				canonicalTaskStates(v.Field(i))
			}
		}
	}
}

// fillRandom sets v (and everything below it) to random content.
// omitEmpty is set for a field tagged omitempty: its collections are
// then nil or non-empty, never empty.
func fillRandom(r *rand.Rand, v reflect.Value, depth int, omitEmpty bool) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.Intn(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := r.Int63()
		if bits := v.Type().Bits(); bits < 64 {
			n &= 1<<(bits-1) - 1
		}
		if r.Intn(2) == 0 {
			n = -n
		}
		if r.Intn(4) == 0 {
			n = 0
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := r.Uint64()
		if bits := v.Type().Bits(); bits < 64 {
			n &= 1<<bits - 1
		}
		if r.Intn(4) == 0 {
			n = 0
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(float32(r.NormFloat64() * 1000)))
	case reflect.String:
		v.SetString(randString(r))
	case reflect.Pointer:
		if depth >= fillMaxDepth || r.Intn(4) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(r, p.Elem(), depth+1, false)
		v.Set(p)
	case reflect.Slice:
		n, ok := randLen(r, depth, omitEmpty)
		if !ok {
			return
		}
		if v.Type() == allocIndexesType {
			// A map on the wire: a list of random IDs, sorted and unique
			// as every AllocIndexes is.
			m := make(map[string]uint64, n)
			for range n {
				m[randString(r)] = r.Uint64()
			}
			v.Set(reflect.ValueOf(NewAllocIndexes(m)))
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			fillRandom(r, s.Index(i), depth+1, false)
		}
		v.Set(s)
	case reflect.Map:
		n, ok := randLen(r, depth, omitEmpty)
		if !ok {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), n)
		for i := 0; i < n; i++ {
			k := reflect.New(v.Type().Key()).Elem()
			fillRandom(r, k, depth+1, false)
			e := reflect.New(v.Type().Elem()).Elem()
			fillRandom(r, e, depth+1, false)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Interface:
		if r.Intn(4) > 0 {
			v.Set(reflect.ValueOf(randAny(r, depth)))
		}
	case reflect.Struct:
		if v.Type() == timeType {
			if r.Intn(4) > 0 {
				v.Set(reflect.ValueOf(time.Unix(r.Int63n(1<<34)-1<<33, r.Int63n(1e9)).UTC()))
			}
			return
		}
		if v.Type() == taskStatesType {
			var m map[string]*TaskState
			fillRandom(r, reflect.ValueOf(&m).Elem(), depth, false)
			v.Set(reflect.ValueOf(NewTaskStates(m)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			skip, omit := codecFieldTag(f)
			if !f.IsExported() || skip {
				continue
			}
			fillRandom(r, v.Field(i), depth, omit)
		}
	default:
		panic("fillRandom: unhandled kind " + v.Kind().String())
	}
}

// randLen picks a collection length; ok false means leave it nil.
func randLen(r *rand.Rand, depth int, omitEmpty bool) (n int, ok bool) {
	if depth >= fillMaxDepth {
		return 0, false
	}
	switch r.Intn(6) {
	case 0:
		return 0, false
	case 1:
		return 0, !omitEmpty
	}
	return 1 + r.Intn(3), true
}

// codecFieldTag reads a field's msgpack tag as MsgpackHandle does: the
// codec tag, else the json tag.
func codecFieldTag(f reflect.StructField) (skip, omitEmpty bool) {
	tag, ok := f.Tag.Lookup("codec")
	if !ok {
		tag = f.Tag.Get("json")
	}
	name, opts, _ := strings.Cut(tag, ",")
	return name == "-", strings.Contains(","+opts+",", ",omitempty,")
}

func randString(r *rand.Rand) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789-_.é世"
	rs := []rune(chars)
	n := r.Intn(12)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(rs[r.Intn(len(rs))])
	}
	return b.String()
}

// randAny returns a value of a type msgpack decodes into an interface as
// itself (see the normalizations of TestCodecRoundTripRandom).
func randAny(r *rand.Rand, depth int) any {
	switch k := r.Intn(6); {
	case k == 0:
		return randString(r)
	case k == 1:
		return r.Int63n(1<<40) - 1<<39
	case k == 2:
		return r.Intn(2) == 1
	case k == 3:
		return float64(float32(r.NormFloat64()))
	case k == 4 && depth < fillMaxDepth:
		out := make([]any, r.Intn(3))
		for i := range out {
			out[i] = randAny(r, depth+1)
		}
		return out
	case depth < fillMaxDepth:
		out := map[string]any{}
		for i := r.Intn(3); i > 0; i-- {
			out[randString(r)] = randAny(r, depth+1)
		}
		return out
	}
	return randString(r)
}

// TestCodecOmitEmptyOnlyOnSingleZero enforces the first omitempty rule of
// codec.go: no slice or map (nor a struct holding one) is tagged
// omitempty in its codec tag, so nil and empty survive msgpack apart.
func TestCodecOmitEmptyOnlyOnSingleZero(t *testing.T) {
	for _, proto := range wireTypes {
		typ := reflect.TypeOf(proto).Elem()
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			tag, ok := f.Tag.Lookup("codec")
			if !ok || !strings.Contains(tag, "omitempty") {
				continue
			}
			if holdsCollection(f.Type) {
				t.Errorf("%s.%s: a slice or map (or a struct holding one) must not be omitempty", typ.Name(), f.Name)
			}
		}
	}
	buf, err := Encode(AllocClientUpdateRequestType, &Allocation{ID: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf, []byte("ClientStatus")) || !bytes.Contains(buf, []byte("TaskStates")) {
		t.Fatalf("zero scalars must be left out and nil maps kept: %q", buf)
	}
}

func holdsCollection(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Map:
		return true
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if holdsCollection(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// TestMsgpackHandleSettings pins the handle options that decide the bytes
// on disk and on the wire: changing one breaks logs, snapshots and servers
// of other versions, whatever the generated code does.
func TestMsgpackHandleSettings(t *testing.T) {
	h := MsgpackHandle
	if !h.RawToString || h.WriteExt || h.TimeNotBuiltin || h.Canonical || h.StructToArray ||
		h.MapType != reflect.TypeOf(map[string]any(nil)) || h.SignedInteger || h.ReaderBufferSize != 0 {
		t.Fatalf("msgpack handle settings changed: %+v", h)
	}
}
