//go:build cloud

package testenv

// A test binary built with -tags cloud builds the onecore it runs with the
// same tag, so that the gs:// and azblob:// drivers are in it.
func init() { binaryTags = "cloud" }
