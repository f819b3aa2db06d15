package pipelines

import (
	"fmt"
	"strconv"
)

// Engine is the job scheduler a batch process runs under, as its
// environment tells: the shard it was given and the job's id, recorded in
// the report and in every STAC Item the process writes.
type Engine struct {
	Name  string // EngineSlurm, EngineKubernetes, EngineAWSBatch, or "" (none)
	JobID string // the engine's id of this task ("" when unknown)
}

// ShardNeed says what a caller can give when the environment does not
// determine this task's shard (EngineError).
type ShardNeed int

const (
	NeedNothing ShardNeed = iota // the environment is wrong as it is
	NeedShard                    // give the shard (index and count) explicitly
	NeedCount                    // give the number of shards
)

// EngineError says why the job engine's environment gives no shard, and
// what the caller may give instead (cmd/pnec words it as its flags).
type EngineError struct {
	Msg  string
	Need ShardNeed
}

func (e *EngineError) Error() string { return e.Msg }

// Engines pnec batch recognises in its environment.
const (
	EngineSlurm      = "slurm"
	EngineKubernetes = "kubernetes"
	EngineAWSBatch   = "aws-batch"
)

// ShardsEnv is the environment variable that gives the shard count to
// engines that do not publish their array size (Kubernetes Indexed Jobs,
// AWS Batch array jobs) when the caller gives none.
const ShardsEnv = "PNEC_SHARDS"

// EngineFromEnv finds the engine and this task's shard from the
// environment (getenv, e.g. os.Getenv); shards is the number of shards the
// caller gives (0: none given). Its errors are *EngineError or wrap one.
//
//   - Slurm job arrays: SLURM_ARRAY_TASK_ID, with the array's range from
//     SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_MAX and SLURM_ARRAY_TASK_STEP
//     (so --array=1-8 and --array=0-14:2 both work); the count is the
//     range's length (SLURM_ARRAY_TASK_COUNT must agree: an array with gaps
//     such as --array=1,4,9 cannot be mapped to shards: give the shard).
//   - Kubernetes Indexed Jobs: JOB_COMPLETION_INDEX, with the count from
//     the shard count given or PNEC_SHARDS (the Job's completions).
//   - AWS Batch array jobs: AWS_BATCH_JOB_ARRAY_INDEX, with the count from
//     the shard count given or PNEC_SHARDS (the array's size).
//
// With none of these, and no shard count, the process takes every input. Two
// engines' variables at once, or an index without its count, are errors.
func EngineFromEnv(getenv func(string) string, shards int) (Engine, Shard, error) {
	var found []string
	for _, v := range []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"} {
		if getenv(v) != "" {
			found = append(found, v)
		}
	}
	if len(found) > 1 {
		return Engine{}, Shard{}, &EngineError{fmt.Sprintf("both %s and %s are set", found[0], found[1]), NeedShard}
	}
	count := func(name string) (int, error) {
		if shards > 0 {
			return shards, nil
		}
		if v := getenv(ShardsEnv); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return 0, &EngineError{fmt.Sprintf("%s=%q: want a positive integer", ShardsEnv, v), NeedNothing}
			}
			return n, nil
		}
		return 0, &EngineError{fmt.Sprintf("%s is set but not the number of shards (%s)", name, ShardsEnv), NeedCount}
	}
	integer := func(name string) (int, error) {
		v := getenv(name)
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, &EngineError{fmt.Sprintf("%s=%q: want an integer", name, v), NeedNothing}
		}
		return n, nil
	}
	var e Engine
	var sh Shard
	switch {
	case len(found) == 0:
		if shards > 0 {
			return Engine{}, Shard{}, &EngineError{fmt.Sprintf("%d shards need a shard index from the engine (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX)", shards), NeedShard}
		}
		return Engine{}, Shard{}, nil
	case found[0] == "SLURM_ARRAY_TASK_ID":
		e.Name = EngineSlurm
		id, err := integer("SLURM_ARRAY_TASK_ID")
		if err != nil {
			return Engine{}, Shard{}, err
		}
		lo, hi, step := 0, 0, 1
		if getenv("SLURM_ARRAY_TASK_MIN") == "" || getenv("SLURM_ARRAY_TASK_MAX") == "" {
			if shards == 0 {
				return Engine{}, Shard{}, &EngineError{"SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_MIN/MAX", NeedCount}
			}
			lo, hi = 0, shards-1
		} else {
			if lo, err = integer("SLURM_ARRAY_TASK_MIN"); err != nil {
				return Engine{}, Shard{}, err
			}
			if hi, err = integer("SLURM_ARRAY_TASK_MAX"); err != nil {
				return Engine{}, Shard{}, err
			}
		}
		if getenv("SLURM_ARRAY_TASK_STEP") != "" {
			if step, err = integer("SLURM_ARRAY_TASK_STEP"); err != nil || step < 1 {
				return Engine{}, Shard{}, &EngineError{fmt.Sprintf("SLURM_ARRAY_TASK_STEP=%q: want a positive integer", getenv("SLURM_ARRAY_TASK_STEP")), NeedNothing}
			}
		}
		if (id-lo)%step != 0 {
			return Engine{}, Shard{}, &EngineError{fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d is not on the array's range %d-%d:%d", id, lo, hi, step), NeedNothing}
		}
		n := (hi-lo)/step + 1
		if c := getenv("SLURM_ARRAY_TASK_COUNT"); c != "" {
			if cn, err := strconv.Atoi(c); err != nil || cn != n {
				return Engine{}, Shard{}, &EngineError{fmt.Sprintf("SLURM_ARRAY_TASK_COUNT=%s but the range %d-%d:%d has %d tasks: an array with gaps cannot be sharded by its task ids", c, lo, hi, step, n), NeedShard}
			}
		}
		if shards > 0 && shards != n {
			return Engine{}, Shard{}, &EngineError{fmt.Sprintf("%d shards given but the Slurm array has %d tasks (%d-%d:%d)", shards, n, lo, hi, step), NeedNothing}
		}
		sh = Shard{Index: (id - lo) / step, Count: n}
		e.JobID = getenv("SLURM_JOB_ID")
		if a := getenv("SLURM_ARRAY_JOB_ID"); a != "" {
			e.JobID = a + "_" + getenv("SLURM_ARRAY_TASK_ID")
		}
	case found[0] == "JOB_COMPLETION_INDEX":
		e.Name = EngineKubernetes
		id, err := integer("JOB_COMPLETION_INDEX")
		if err != nil {
			return Engine{}, Shard{}, err
		}
		n, err := count("JOB_COMPLETION_INDEX")
		if err != nil {
			return Engine{}, Shard{}, err
		}
		sh = Shard{Index: id, Count: n}
		e.JobID = getenv("HOSTNAME") // the pod's name
	default:
		e.Name = EngineAWSBatch
		id, err := integer("AWS_BATCH_JOB_ARRAY_INDEX")
		if err != nil {
			return Engine{}, Shard{}, err
		}
		n, err := count("AWS_BATCH_JOB_ARRAY_INDEX")
		if err != nil {
			return Engine{}, Shard{}, err
		}
		sh = Shard{Index: id, Count: n}
		e.JobID = getenv("AWS_BATCH_JOB_ID")
	}
	if err := sh.Validate(); err != nil {
		return Engine{}, Shard{}, &EngineError{fmt.Sprintf("%s: %v", e.Name, err), NeedNothing}
	}
	return e, sh, nil
}
