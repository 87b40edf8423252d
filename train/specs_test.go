package train

import (
	"fmt"
	"sort"
	"testing"

	"github.com/onecore-dev/onecore/engine"
)

// The training parameter list must be exactly the engine's tensor list.
func TestParamSpecsMatchEngine(t *testing.T) {
	for _, c := range []*Config{tinyConfig(false), tinyConfig(true), smallConfig()} {
		var mine, theirs []string
		for _, s := range ParamSpecs(c, 0) {
			mine = append(mine, fmt.Sprint(s.Name, s.Shape))
		}
		for _, s := range engine.TensorSpecs(c) {
			theirs = append(theirs, fmt.Sprint(s.Name, s.Shape))
		}
		sort.Strings(mine)
		sort.Strings(theirs)
		if fmt.Sprint(mine) != fmt.Sprint(theirs) {
			t.Errorf("train specs %v\nengine specs %v", mine, theirs)
		}
	}
}
