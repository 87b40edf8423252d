package blobstore

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestS3UploadChecksums writes objects the way onecore writes to AWS
// itself, with a CRC32 checksum on every part and on the completed upload
// (custom endpoints get none: TestS3Objects covers that path), against the
// real server, which checks them.
func TestS3UploadChecksums(t *testing.T) {
	srv := testenv.StartS3(t)
	srv.Setenv(t)
	root := srv.Bucket(t)
	l, err := Parse(root + "/x")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(srv.Endpoint)
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenSupported
	})
	data := bytes.Repeat([]byte("checksummed part "), (2*PartSize+999)/17)
	for _, n := range []int{100, len(data)} {
		key := "crc/" + strings.Repeat("x", n%7+1)
		u := newS3Upload(ctx, client, l.Bucket, key, true)
		if u.checksum == "" {
			t.Fatal("no part checksum for a client that asks for them")
		}
		if _, err := u.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		if err := u.Commit(); err != nil {
			t.Fatalf("%d bytes with CRC32 checksums: %v", n, err)
		}
		got, err := ReadAll(ctx, Join(root, key))
		if err != nil || !bytes.Equal(got, data[:n]) {
			t.Fatalf("%d bytes read back as %d, %v", n, len(got), err)
		}
		head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &l.Bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil || head.ChecksumCRC32 == nil {
			t.Fatalf("%d bytes: the server kept no CRC32 checksum (%v)", n, err)
		}
		t.Logf("%d bytes: CRC32 %s", n, *head.ChecksumCRC32)
	}
}
