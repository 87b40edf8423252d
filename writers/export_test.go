package writers

// SetGenericParquet makes Create use the pqarrow encoder for every Parquet
// file (true) or the string fast path where it applies (false).
func SetGenericParquet(on bool) { genericParquet = on }
