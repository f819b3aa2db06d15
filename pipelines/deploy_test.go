package pipelines

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDeployExamples checks the engine examples in deploy/ as written: the
// Kubernetes CronJob parses and its --shards equals its completions; the
// AWS Batch job definition parses and sets PNEC_SHARDS, with --max-memory
// under its memory; the sbatch script is valid bash whose --max-memory is
// at most its --mem and which needs no --shard (the array gives it).
func TestDeployExamples(t *testing.T) {
	t.Run("kubernetes", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("deploy", "k8s-indexed-job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Kind string
			Spec struct {
				JobTemplate struct {
					Spec struct {
						CompletionMode string `yaml:"completionMode"`
						Completions    int
						Template       struct {
							Spec struct {
								Containers []struct{ Args []string }
							}
						}
					}
				} `yaml:"jobTemplate"`
			}
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		js := doc.Spec.JobTemplate.Spec
		if doc.Kind != "CronJob" || js.CompletionMode != "Indexed" || len(js.Template.Spec.Containers) != 1 {
			t.Fatalf("got kind %q, completion mode %q", doc.Kind, js.CompletionMode)
		}
		args := js.Template.Spec.Containers[0].Args
		if got := flagValue(args, "--shards"); got != itoa(js.Completions) {
			t.Errorf("--shards %q, completions %d: they must be equal", got, js.Completions)
		}
	})
	t.Run("aws-batch", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("deploy", "aws-batch-job.json"))
		if err != nil {
			t.Fatal(err)
		}
		var def struct {
			Type                string
			ContainerProperties struct {
				Command     []string
				Environment []struct{ Name, Value string }
				Resources   []struct{ Type, Value string } `json:"resourceRequirements"`
			} `json:"containerProperties"`
		}
		if err := json.Unmarshal(b, &def); err != nil {
			t.Fatal(err)
		}
		cp := def.ContainerProperties
		env := map[string]string{}
		for _, e := range cp.Environment {
			env[e.Name] = e.Value
		}
		if def.Type != "container" || env[ShardsEnv] == "" || flagValue(cp.Command, "--shard") != "" {
			t.Errorf("type %q, %s=%q: an array job needs the shard count and no --shard", def.Type, ShardsEnv, env[ShardsEnv])
		}
		mem := ""
		for _, r := range cp.Resources {
			if r.Type == "MEMORY" {
				mem = r.Value + "M"
			}
		}
		if budget, limit := parseSize(t, flagValue(cp.Command, "--max-memory")), parseSize(t, mem); budget > limit {
			t.Errorf("--max-memory %d bytes above the container's %d", budget, limit)
		}
	})
	t.Run("slurm", func(t *testing.T) {
		path := filepath.Join("deploy", "slurm-nightly.sbatch")
		if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
			t.Fatalf("bash -n: %v\n%s", err, out)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		mem := regexp.MustCompile(`(?m)^#SBATCH --mem=(\S+)`).FindStringSubmatch(s)
		budget := regexp.MustCompile(`--max-memory (\d+[MG])\b`).FindStringSubmatch(s)
		if mem == nil || budget == nil || !strings.Contains(s, "#SBATCH --array=") {
			t.Fatalf("want #SBATCH --array, #SBATCH --mem and --max-memory")
		}
		if parseSize(t, budget[1]) > parseSize(t, mem[1]) {
			t.Errorf("--max-memory %s above --mem %s", budget[1], mem[1])
		}
		var code []string // the script without its comments
		for _, line := range strings.Split(s, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "#") {
				code = append(code, line)
			}
		}
		if strings.Contains(strings.Join(code, "\n"), "--shard") {
			t.Errorf("the array gives the shard: no --shard")
		}
	})
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// parseSize reads 7G, 8192M (binary units) as bytes.
func parseSize(t *testing.T, s string) int64 {
	t.Helper()
	m := regexp.MustCompile(`^(\d+)([MG])$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("size %q: want N followed by M or G", s)
	}
	var n int64
	for _, c := range m[1] {
		n = n*10 + int64(c-'0')
	}
	if m[2] == "G" {
		return n << 30
	}
	return n << 20
}
