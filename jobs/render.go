package jobs

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// RenderOptions describe a cluster launch of a job file over World ranks.
type RenderOptions struct {
	JobFile string // path of the job YAML (Slurm: read at run time, so absolute)
	JobYAML []byte // its content (Kubernetes: shipped in a ConfigMap)
	In, Out string // input shards and output directory (override the job's)
	Model   string // checkpoint directory on the nodes (empty: the job's / default)
	World   int    // number of ranks (array tasks / completions)
	CPUs    int    // cores per rank; also --workers
	Binary  string // the onecore executable on the nodes
	Name    string // job name (default: onecore-<job file stem>)

	Partition, Time, Mem string // Slurm extras (optional)

	Image     string // Kubernetes container image
	Namespace string // Kubernetes namespace (optional)
	PVC       string // Kubernetes PersistentVolumeClaim holding data (optional)
	MountPath string // where PVC is mounted (default /data)
}

func (o *RenderOptions) defaults() error {
	if o.World < 1 {
		return fmt.Errorf("--world %d: need at least 1", o.World)
	}
	if o.Out == "" {
		return fmt.Errorf("no output: pass --out or set out: in the job file")
	}
	if o.In == "" {
		return fmt.Errorf("no input: pass --in or set in: in the job file")
	}
	if o.CPUs <= 0 {
		o.CPUs = 1
	}
	if o.Binary == "" {
		o.Binary = "onecore"
	}
	if o.Name == "" {
		stem := strings.TrimSuffix(filepath.Base(o.JobFile), filepath.Ext(o.JobFile))
		o.Name = "onecore-" + stem
	}
	o.Name = dnsName(o.Name)
	if o.MountPath == "" {
		o.MountPath = "/data"
	}
	return nil
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsName makes a Kubernetes-valid (RFC 1123 label) name.
func dnsName(s string) string {
	s = notDNS.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-")
	if len(s) > 52 { // leave room for the pod suffixes Kubernetes appends
		s = strings.TrimRight(s[:52], "-")
	}
	if s == "" {
		s = "onecore"
	}
	return s
}

func (o *RenderOptions) args(jobPath string, withWorld bool) []string {
	a := []string{o.Binary, "extract", "--job", jobPath, "--in", o.In, "--out", o.Out, "--workers", strconv.Itoa(o.CPUs)}
	if o.Model != "" {
		a = append(a, "--model", o.Model)
	}
	if withWorld {
		a = append(a, "--world", strconv.Itoa(o.World))
	}
	return a
}

// RenderSlurm prints an sbatch script running the job as a Slurm job array
// of World tasks; each task takes its rank from $SLURM_ARRAY_TASK_ID.
func RenderSlurm(o RenderOptions) (string, error) {
	if err := o.defaults(); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", o.Name)
	fmt.Fprintf(&b, "#SBATCH --array=0-%d\n", o.World-1)
	fmt.Fprintf(&b, "#SBATCH --ntasks=1\n")
	fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", o.CPUs)
	fmt.Fprintf(&b, "#SBATCH --output=%s-%%A_%%a.log\n", o.Name)
	if o.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", o.Partition)
	}
	if o.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", o.Time)
	}
	if o.Mem != "" {
		fmt.Fprintf(&b, "#SBATCH --mem=%s\n", o.Mem)
	}
	b.WriteString("#\n# Each array task processes shards i with i mod SLURM_ARRAY_TASK_COUNT == its index;\n")
	b.WriteString("# resubmitting the same script resumes: finished shards are skipped.\n")
	b.WriteString("# Exit codes: 0 ok, 3 finished with rejected rows/files, 130 interrupted (resubmit).\n")
	b.WriteString("set -euo pipefail\n")
	b.WriteString("exec")
	for _, a := range o.args(o.JobFile, false) {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	return b.String(), nil
}

// RenderK8s prints a Kubernetes ConfigMap (holding the job file) and an
// Indexed Job of World completions; each pod takes its rank from
// JOB_COMPLETION_INDEX and is told --world.
func RenderK8s(o RenderOptions) (string, error) {
	if err := o.defaults(); err != nil {
		return "", err
	}
	if o.Image == "" {
		return "", fmt.Errorf("kubernetes needs --image (a container image with onecore and the model)")
	}
	meta := func(name string) map[string]any {
		m := map[string]any{"name": name, "labels": map[string]any{"app.kubernetes.io/name": "onecore", "onecore/job": o.Name}}
		if o.Namespace != "" {
			m["namespace"] = o.Namespace
		}
		return m
	}
	cm := map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   meta(o.Name + "-job"),
		"data":       map[string]any{"job.yaml": string(o.JobYAML)},
	}
	cpu := strconv.Itoa(o.CPUs)
	container := map[string]any{
		"name":    "onecore",
		"image":   o.Image,
		"command": o.args("/etc/onecore/job.yaml", true),
		"resources": map[string]any{
			"requests": map[string]any{"cpu": cpu},
			"limits":   map[string]any{"cpu": cpu},
		},
		"volumeMounts": []any{map[string]any{"name": "job", "mountPath": "/etc/onecore", "readOnly": true}},
	}
	volumes := []any{map[string]any{"name": "job", "configMap": map[string]any{"name": o.Name + "-job"}}}
	if o.PVC != "" {
		container["volumeMounts"] = append(container["volumeMounts"].([]any), map[string]any{"name": "data", "mountPath": o.MountPath})
		volumes = append(volumes, map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": o.PVC}})
	}
	job := map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   meta(o.Name),
		"spec": map[string]any{
			"completionMode":       "Indexed",
			"completions":          o.World,
			"parallelism":          o.World,
			"backoffLimitPerIndex": 3, // a failed rank is retried; finished shards are skipped
			"maxFailedIndexes":     o.World,
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"onecore/job": o.Name}},
				"spec": map[string]any{
					"restartPolicy": "Never",
					"containers":    []any{container},
					"volumes":       volumes,
				},
			},
		},
	}
	var b bytes.Buffer
	b.WriteString("# onecore: apply with kubectl apply -f; each pod processes shards i with i mod completions == JOB_COMPLETION_INDEX.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(cm); err != nil {
		return "", err
	}
	if err := enc.Encode(job); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// shellQuote quotes s for bash when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
