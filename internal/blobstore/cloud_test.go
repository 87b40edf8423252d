//go:build cloud

package blobstore

import (
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestGCSObjects runs the object-storage operations against a Google Cloud
// Storage emulator (fake-gcs-server) through gocloud.dev's gcsblob driver.
func TestGCSObjects(t *testing.T) {
	gcs := testenv.StartGCS(t)
	gcs.Setenv(t)
	exerciseObjects(t, gcs.Bucket(t))
}

// TestAzblobObjects runs them against Azure's emulator (Azurite) through
// gocloud.dev's azureblob driver.
func TestAzblobObjects(t *testing.T) {
	az := testenv.StartAzurite(t)
	az.Setenv(t)
	exerciseObjects(t, az.Bucket(t))
}
