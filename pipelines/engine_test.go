package pipelines

import (
	"errors"
	"strings"
	"testing"
)

func TestEngineFromEnv(t *testing.T) {
	cases := []struct {
		name   string
		env    map[string]string
		shards int
		want   Engine
		shard  Shard
		need   ShardNeed // of the *EngineError, when err is set
		err    string    // substring of the error; "" = no error
	}{
		{name: "none", want: Engine{}},
		{name: "none with a count", shards: 4, err: "need a shard index", need: NeedShard},
		{name: "slurm 0-3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_JOB_ID": "77", "SLURM_JOB_ID": "79"},
			want: Engine{Name: EngineSlurm, JobID: "77_2"}, shard: Shard{Index: 2, Count: 4}},
		{name: "slurm 1-8", env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "8"},
			want: Engine{Name: EngineSlurm}, shard: Shard{Index: 0, Count: 8}},
		{name: "slurm step 2", env: map[string]string{"SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "14", "SLURM_ARRAY_TASK_STEP": "2", "SLURM_JOB_ID": "5"},
			want: Engine{Name: EngineSlurm, JobID: "5"}, shard: Shard{Index: 3, Count: 8}},
		{name: "slurm gaps", env: map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "9", "SLURM_ARRAY_TASK_COUNT": "3"}, err: "with gaps", need: NeedShard},
		{name: "slurm off range", env: map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_STEP": "2"}, err: "not on the array"},
		{name: "slurm shards disagree", env: map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}, shards: 5, err: "has 4 tasks"},
		{name: "slurm no range", env: map[string]string{"SLURM_ARRAY_TASK_ID": "0"}, err: "without SLURM_ARRAY_TASK_MIN", need: NeedCount},
		{name: "slurm bad id", env: map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}, err: `SLURM_ARRAY_TASK_ID="x"`},
		{name: "kubernetes --shards", env: map[string]string{"JOB_COMPLETION_INDEX": "3", "HOSTNAME": "nightly-3-abcde"}, shards: 8,
			want: Engine{Name: EngineKubernetes, JobID: "nightly-3-abcde"}, shard: Shard{Index: 3, Count: 8}},
		{name: "kubernetes PNEC_SHARDS", env: map[string]string{"JOB_COMPLETION_INDEX": "0", ShardsEnv: "2"},
			want: Engine{Name: EngineKubernetes}, shard: Shard{Index: 0, Count: 2}},
		{name: "kubernetes no count", env: map[string]string{"JOB_COMPLETION_INDEX": "0"}, err: "not the number of shards", need: NeedCount},
		{name: "kubernetes index too big", env: map[string]string{"JOB_COMPLETION_INDEX": "8"}, shards: 8, err: "want 0 <= index < count"},
		{name: "aws", env: map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "5", "AWS_BATCH_JOB_ID": "abc:5", ShardsEnv: "10"},
			want: Engine{Name: EngineAWSBatch, JobID: "abc:5"}, shard: Shard{Index: 5, Count: 10}},
		{name: "aws bad count", env: map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "5", ShardsEnv: "zero"}, err: "PNEC_SHARDS"},
		{name: "two engines", env: map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "1", "JOB_COMPLETION_INDEX": "1"}, shards: 4, err: "both", need: NeedShard},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, sh, err := EngineFromEnv(func(k string) string { return tc.env[k] }, tc.shards)
			if tc.err != "" {
				var ee *EngineError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &ee) || ee.Need != tc.need {
					t.Fatalf("got %+v, %v; want an *EngineError containing %q, need %d", got, err, tc.err, tc.need)
				}
				if strings.Contains(err.Error(), "--") {
					t.Errorf("error %q names a command-line flag", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || sh != tc.shard {
				t.Errorf("got %+v %v, want %+v %v", got, sh, tc.want, tc.shard)
			}
		})
	}
}
