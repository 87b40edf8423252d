// Package deps pins the module's third-party dependencies while the packages
// that use them are being written. Delete it once every dependency is
// imported by real code.
package deps

import (
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/parquet-go/parquet-go"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "golang.org/x/text/unicode/norm"
)
