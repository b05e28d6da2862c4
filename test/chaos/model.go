package chaos

import (
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// jobState is the model of one job: a register holding whether the job
// exists, the marker value of the register that wrote it, and its count.
type jobState struct {
	Exists bool
	Val    string
	Count  int
}

// modelInput and modelOutput are porcupine's input and output of an Op.
type modelInput struct {
	Kind, Key, Val, Expect string
	Count                  int
}

type modelOutput struct {
	Unknown, NotFound, Conflict bool
	Exists                      bool
	Val                         string
	Count                       int
}

// jobModel is the sequential specification of a job under the workload:
//   - register sets the job (value, count);
//   - deregister (purge) removes it; answered 404, the job was absent;
//   - scale is conditional on the modify index the writer read with the
//     value Expect: applied only while the job still holds Expect, it
//     sets the count; answered 404 the job was absent; answered 409 it
//     changed nothing (the index moved, which the model does not track);
//   - read returns the job, or 404 while it is absent.
//
// An unknown outcome may or may not have taken effect: its completion time
// is infinity, so porcupine may place it anywhere after its call
// (including after every other operation, which is "never applied"); an
// unknown scale, conditional, may also have found its condition false.
// Unknown reads say nothing and are left out.
var jobModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(modelInput).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{jobState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(jobState), input.(modelInput), output.(modelOutput)
		switch in.Kind {
		case OpRegister:
			return []interface{}{jobState{Exists: true, Val: in.Val, Count: in.Count}}
		case OpDeregister:
			if out.NotFound {
				if s.Exists {
					return nil
				}
				return []interface{}{s}
			}
			return []interface{}{jobState{}}
		case OpScale:
			holds := s.Exists && s.Val == in.Expect
			scaled := jobState{Exists: true, Val: s.Val, Count: in.Count}
			switch {
			case out.Unknown:
				if holds {
					return []interface{}{s, scaled}
				}
				return []interface{}{s}
			case out.NotFound:
				if s.Exists {
					return nil
				}
				return []interface{}{s}
			case out.Conflict:
				return []interface{}{s}
			case holds:
				return []interface{}{scaled}
			}
			return nil
		case OpRead:
			if out.NotFound {
				if s.Exists {
					return nil
				}
				return []interface{}{s}
			}
			if s == (jobState{Exists: true, Val: out.Val, Count: out.Count}) {
				return []interface{}{s}
			}
			return nil
		}
		return nil
	},
	Equal: func(a, b interface{}) bool { return a.(jobState) == b.(jobState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(modelInput), output.(modelOutput)
		res := "ok"
		switch {
		case out.Unknown:
			res = "unknown"
		case out.NotFound:
			res = "404"
		case out.Conflict:
			res = "409"
		}
		switch in.Kind {
		case OpRegister:
			return fmt.Sprintf("register(%s, %d) -> %s", in.Val, in.Count, res)
		case OpScale:
			return fmt.Sprintf("scale(if %s, %d) -> %s", in.Expect, in.Count, res)
		case OpRead:
			if out.NotFound {
				return "read() -> 404"
			}
			return fmt.Sprintf("read() -> (%s, %d)", out.Val, out.Count)
		}
		return in.Kind + "() -> " + res
	},
	DescribeState: func(state interface{}) string {
		s := state.(jobState)
		if !s.Exists {
			return "absent"
		}
		return fmt.Sprintf("(%s, %d)", s.Val, s.Count)
	},
}

// porcupineOps turns the history into porcupine's operations: refusals
// (4xx) other than 404 and 409 wrote nothing and are left out, as are
// reads of unknown outcome; unknown writes end at infinity.
func porcupineOps(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		in := modelInput{Kind: op.Kind, Key: op.Key, Val: op.Val, Expect: op.Expect, Count: op.Count}
		res := modelOutput{}
		ret := op.Return
		switch {
		case op.Outcome == OutcomeUnknown:
			if op.Kind == OpRead {
				continue
			}
			res.Unknown, ret = true, math.MaxInt64
		case op.NotFound():
			res.NotFound = true
		case op.Conflict():
			res.Conflict = true
		case op.Outcome == OutcomeFail:
			continue
		}
		if op.Kind == OpRead && op.Outcome == OutcomeOK {
			res.Exists, res.Val, res.Count = true, op.ReadVal, op.ReadCount
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: in, Call: op.Call, Output: res, Return: ret})
	}
	return out
}

// CheckLinearizable checks the history per job with porcupine. On any
// result but Ok and when visualize is set, it writes porcupine's HTML
// visualisation there.
func CheckLinearizable(ops []Op, timeout time.Duration, visualize string) (porcupine.CheckResult, error) {
	model := jobModel.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, porcupineOps(ops), timeout)
	if res != porcupine.Ok && visualize != "" {
		f, err := os.Create(visualize)
		if err != nil {
			return res, err
		}
		defer f.Close()
		if err := porcupine.Visualize(model, info, f); err != nil {
			return res, err
		}
	}
	return res, nil
}

// LostWrite is an acknowledged write that the final state neither shows
// nor can be explained as superseded.
type LostWrite struct {
	Key   string `json:"key"`
	Write Op     `json:"write"`
	Final string `json:"final"`
}

// CheckNoLostWrites compares each job's final state (read after healing
// and convergence, from the leader) with the writes: the last
// acknowledged write to each job (the one completing last) must be
// visible, or superseded by a write (acknowledged or unknown) that did
// not complete before it began. Values are compared (a register's value,
// or absence after a deregister); counts are left to porcupine.
func CheckNoLostWrites(ops []Op, final map[string]jobState) []LostWrite {
	writes := map[string][]Op{}
	for _, op := range ops {
		if op.Kind == OpRead || op.Outcome == OutcomeFail {
			continue
		}
		writes[op.Key] = append(writes[op.Key], op)
	}
	var lost []LostWrite
	for key, ws := range writes {
		var last *Op
		for i := range ws {
			if ws[i].Outcome == OutcomeOK && (last == nil || ws[i].Return > last.Return) {
				last = &ws[i]
			}
		}
		if last == nil {
			continue
		}
		fin := final[key]
		explained := false
		for _, w := range ws {
			ret := w.Return
			if w.Outcome == OutcomeUnknown {
				ret = math.MaxInt64
			}
			if ret < last.Call {
				continue // completed before the last acknowledged write began
			}
			switch w.Kind {
			case OpRegister:
				explained = explained || (fin.Exists && fin.Val == w.Val)
			case OpDeregister:
				explained = explained || !fin.Exists
			case OpScale:
				explained = explained || (fin.Exists && fin.Val == w.Expect)
			}
		}
		if !explained {
			desc := "absent"
			if fin.Exists {
				desc = fmt.Sprintf("(%s, %d)", fin.Val, fin.Count)
			}
			lost = append(lost, LostWrite{Key: key, Write: *last, Final: desc})
		}
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i].Key < lost[j].Key })
	return lost
}
