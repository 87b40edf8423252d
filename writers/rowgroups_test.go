package writers_test

import (
	"os"

	"github.com/parquet-go/parquet-go"
)

// openParquetGroups counts the row groups of a Parquet file.
func openParquetGroups(f *os.File, size int64) (int, error) {
	pf, err := parquet.OpenFile(f, size)
	if err != nil {
		return 0, err
	}
	return len(pf.RowGroups()), nil
}
