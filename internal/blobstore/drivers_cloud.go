//go:build cloud

package blobstore

// Built with -tags cloud, onecore links gocloud.dev's Google Cloud Storage
// and Azure Blob Storage drivers, which register gs:// and azblob:// on
// blob.DefaultURLMux (openOther opens them there). They are opt-in because
// they pull in both cloud SDKs, several hundred packages more to build for
// every test binary; S3 (and S3-compatible servers) is always built in.
import (
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/gcsblob"
)
