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
	env := engineEnv{getenv: getenv, shards: shards}
	var e Engine
	var sh Shard
	var err error
	switch {
	case len(found) == 0:
		if shards > 0 {
			return Engine{}, Shard{}, &EngineError{fmt.Sprintf("%d shards need a shard index from the engine (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX)", shards), NeedShard}
		}
		return Engine{}, Shard{}, nil
	case found[0] == "SLURM_ARRAY_TASK_ID":
		e, sh, err = env.slurm()
	case found[0] == "JOB_COMPLETION_INDEX":
		e, sh, err = env.indexed(EngineKubernetes, "JOB_COMPLETION_INDEX", "HOSTNAME") // HOSTNAME: the pod's name
	default:
		e, sh, err = env.indexed(EngineAWSBatch, "AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ID")
	}
	if err != nil {
		return Engine{}, Shard{}, err
	}
	if err := sh.Validate(); err != nil {
		return Engine{}, Shard{}, &EngineError{fmt.Sprintf("%s: %v", e.Name, err), NeedNothing}
	}
	return e, sh, nil
}

// engineEnv is EngineFromEnv's environment and the shard count the caller
// gives (0: none given).
type engineEnv struct {
	getenv func(string) string
	shards int
}

// count is the number of shards: the caller's, else PNEC_SHARDS; name is
// the index variable that needs it.
func (env engineEnv) count(name string) (int, error) {
	if env.shards > 0 {
		return env.shards, nil
	}
	if v := env.getenv(ShardsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, &EngineError{fmt.Sprintf("%s=%q: want a positive integer", ShardsEnv, v), NeedNothing}
		}
		return n, nil
	}
	return 0, &EngineError{fmt.Sprintf("%s is set but not the number of shards (%s)", name, ShardsEnv), NeedCount}
}

// integer is variable name's value as an integer.
func (env engineEnv) integer(name string) (int, error) {
	v := env.getenv(name)
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, &EngineError{fmt.Sprintf("%s=%q: want an integer", name, v), NeedNothing}
	}
	return n, nil
}

// indexed is an engine that gives the task's index in variable index and
// no count (Kubernetes Indexed Jobs, AWS Batch array jobs), with the job's
// id in variable jobID.
func (env engineEnv) indexed(name, index, jobID string) (Engine, Shard, error) {
	id, err := env.integer(index)
	if err != nil {
		return Engine{}, Shard{}, err
	}
	n, err := env.count(index)
	if err != nil {
		return Engine{}, Shard{}, err
	}
	return Engine{Name: name, JobID: env.getenv(jobID)}, Shard{Index: id, Count: n}, nil
}

// slurm maps a Slurm array task to its shard: the task id's place on the
// array's range, which must have no gaps and agree with the caller's
// shard count.
func (env engineEnv) slurm() (Engine, Shard, error) {
	id, err := env.integer("SLURM_ARRAY_TASK_ID")
	if err != nil {
		return Engine{}, Shard{}, err
	}
	lo, hi, step, err := env.slurmRange()
	if err != nil {
		return Engine{}, Shard{}, err
	}
	if (id-lo)%step != 0 {
		return Engine{}, Shard{}, &EngineError{fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d is not on the array's range %d-%d:%d", id, lo, hi, step), NeedNothing}
	}
	n := (hi-lo)/step + 1
	if c := env.getenv("SLURM_ARRAY_TASK_COUNT"); c != "" {
		if cn, err := strconv.Atoi(c); err != nil || cn != n {
			return Engine{}, Shard{}, &EngineError{fmt.Sprintf("SLURM_ARRAY_TASK_COUNT=%s but the range %d-%d:%d has %d tasks: an array with gaps cannot be sharded by its task ids", c, lo, hi, step, n), NeedShard}
		}
	}
	if env.shards > 0 && env.shards != n {
		return Engine{}, Shard{}, &EngineError{fmt.Sprintf("%d shards given but the Slurm array has %d tasks (%d-%d:%d)", env.shards, n, lo, hi, step), NeedNothing}
	}
	e := Engine{Name: EngineSlurm, JobID: env.getenv("SLURM_JOB_ID")}
	if a := env.getenv("SLURM_ARRAY_JOB_ID"); a != "" {
		e.JobID = a + "_" + env.getenv("SLURM_ARRAY_TASK_ID")
	}
	return e, Shard{Index: (id - lo) / step, Count: n}, nil
}

// slurmRange is the array's range SLURM_ARRAY_TASK_MIN to MAX by STEP (1
// when absent), or 0 to the caller's shard count - 1 when Slurm does not
// say.
func (env engineEnv) slurmRange() (lo, hi, step int, err error) {
	step = 1
	if env.getenv("SLURM_ARRAY_TASK_MIN") == "" || env.getenv("SLURM_ARRAY_TASK_MAX") == "" {
		if env.shards == 0 {
			return 0, 0, 0, &EngineError{"SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_MIN/MAX", NeedCount}
		}
		lo, hi = 0, env.shards-1
	} else {
		if lo, err = env.integer("SLURM_ARRAY_TASK_MIN"); err != nil {
			return 0, 0, 0, err
		}
		if hi, err = env.integer("SLURM_ARRAY_TASK_MAX"); err != nil {
			return 0, 0, 0, err
		}
	}
	if env.getenv("SLURM_ARRAY_TASK_STEP") != "" {
		if step, err = env.integer("SLURM_ARRAY_TASK_STEP"); err != nil || step < 1 {
			return 0, 0, 0, &EngineError{fmt.Sprintf("SLURM_ARRAY_TASK_STEP=%q: want a positive integer", env.getenv("SLURM_ARRAY_TASK_STEP")), NeedNothing}
		}
	}
	return lo, hi, step, nil
}
