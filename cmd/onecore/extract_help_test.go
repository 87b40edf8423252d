package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestTaskCommandHelp: classify, score and embed each print their own help
// (their own examples and columns), without the flags of other tasks, while
// extract keeps every flag.
func TestTaskCommandHelp(t *testing.T) {
	help := func(name string) string {
		c, _, err := rootCmd.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		c.SetOut(&b)
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	// flag: the flag's line in the help's flag list
	flag := func(name string) *regexp.Regexp { return regexp.MustCompile(`(?m)^\s+--` + name + `\b`) }
	cases := map[string]struct{ want, flags, notFlags []string }{
		"classify": {[]string{"onecore classify --in", "probs"}, []string{"labels", "template", "keep"}, []string{"question", "question-field", "extractive", "max-new-tokens", "abstain", "max-span", "span-threshold", "task"}},
		"score":    {[]string{"onecore score --in", "mean_logprob", "perplexity", "bits_per_byte"}, []string{"keep", "max-tokens"}, []string{"question", "labels", "template", "classify-by", "extractive", "task"}},
		"embed":    {[]string{"onecore embed --in", "embedding"}, []string{"keep"}, []string{"question", "labels", "template", "extractive", "task"}},
		"extract":  {[]string{"onecore extract --", "answer_start", "answer_end"}, []string{"question", "labels", "task", "extractive", "template", "max-span", "span-threshold"}, nil},
	}
	for name, c := range cases {
		h := help(name)
		for _, w := range c.want {
			if !strings.Contains(h, w) {
				t.Errorf("%s --help lacks %q", name, w)
			}
		}
		if name != "extract" && strings.Contains(h, "onecore extract ") {
			t.Errorf("%s --help shows extract's examples", name)
		}
		for _, f := range c.flags {
			if !flag(f).MatchString(h) {
				t.Errorf("%s --help does not list --%s", name, f)
			}
		}
		for _, f := range c.notFlags {
			if flag(f).MatchString(h) {
				t.Errorf("%s --help lists --%s, which does not apply to it", name, f)
			}
		}
	}
}
