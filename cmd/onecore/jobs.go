package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/onecore-dev/onecore/jobs"
	"github.com/spf13/cobra"
)

var jobsCmd = &cobra.Command{
	Use:   "jobs",
	Short: "Launch extraction jobs on clusters (Slurm arrays, Kubernetes Indexed Jobs)",
}

func init() {
	var o jobs.RenderOptions
	var jobFile string
	render := &cobra.Command{
		Use:   "render slurm|k8s --job job.yaml --world W",
		Short: "Print an sbatch array script or a Kubernetes Indexed Job for a job file",
		Long: `Render prints a ready-to-submit launch of a job file over W ranks.

  slurm: an sbatch script with --array=0-(W-1); each array task reads its rank
         from SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT.
  k8s:   a ConfigMap holding the job file plus an Indexed Job with W
         completions; each pod reads its rank from JOB_COMPLETION_INDEX and is
         given --world W.

Each rank takes the shards i with i mod W == rank (of the sorted input
listing), writes one part per shard into the output directory and marks it
complete. Resubmitting the same launch resumes: finished shards are skipped,
and a lock per part keeps overlapping launches from writing the same part.
--in and --out default to the job file's in: and out: fields.`,
		Example: `  onecore jobs render slurm --job spam.yaml --world 16 --cpus 32 > spam.sbatch && sbatch spam.sbatch
  onecore jobs render k8s --job spam.yaml --world 8 --cpus 16 --image registry/onecore:1 --pvc corpus | kubectl apply -f -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if jobFile == "" {
				return usageError{fmt.Errorf("--job is required")}
			}
			b, err := os.ReadFile(jobFile)
			if err != nil {
				return err
			}
			j, err := jobs.Parse(b)
			if err != nil {
				return fmt.Errorf("job file %s: %w", jobFile, err)
			}
			if err := j.Normalize(); err != nil {
				return fmt.Errorf("job file %s: %w", jobFile, err)
			}
			if o.In == "" {
				o.In = j.In
			}
			if o.Out == "" {
				o.Out = j.Out
			}
			if abs, err := filepath.Abs(jobFile); err == nil {
				o.JobFile = abs
			}
			o.JobYAML = b
			var s string
			switch args[0] {
			case "slurm":
				s, err = jobs.RenderSlurm(o)
			case "k8s", "kubernetes":
				s, err = jobs.RenderK8s(o)
			default:
				return usageError{fmt.Errorf("render %q: want slurm or k8s", args[0])}
			}
			if err != nil {
				return usageError{err}
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), s)
			return err
		},
	}
	f := render.Flags()
	f.StringVar(&jobFile, "job", "", "job YAML file (required)")
	f.IntVar(&o.World, "world", 0, "number of ranks: array tasks / completions (required)")
	f.StringVar(&o.In, "in", "", "input shards (default: the job's in:)")
	f.StringVar(&o.Out, "out", "", "output directory (default: the job's out:)")
	f.StringVar(&o.Model, "model", "", "checkpoint directory on the nodes")
	f.IntVar(&o.CPUs, "cpus", 1, "cores per rank (also --workers)")
	f.StringVar(&o.Binary, "binary", "onecore", "the onecore executable on the nodes")
	f.StringVar(&o.Name, "name", "", "job name (default onecore-<job file name>)")
	f.StringVar(&o.Partition, "partition", "", "Slurm partition")
	f.StringVar(&o.Time, "time", "", "Slurm time limit (e.g. 12:00:00)")
	f.StringVar(&o.Mem, "mem", "", "Slurm memory per task (e.g. 8G)")
	f.StringVar(&o.Image, "image", "", "Kubernetes container image holding onecore and the model")
	f.StringVar(&o.Namespace, "namespace", "", "Kubernetes namespace")
	f.StringVar(&o.PVC, "pvc", "", "Kubernetes PersistentVolumeClaim with the data")
	f.StringVar(&o.MountPath, "mount", "/data", "where --pvc is mounted")
	render.MarkFlagRequired("world")
	jobsCmd.AddCommand(render)
	rootCmd.AddCommand(jobsCmd)
}
