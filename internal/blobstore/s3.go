package blobstore

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
)

// openS3 opens an S3 bucket with the AWS SDK v2. The SDK's own chain gives
// credentials, region and endpoint (AWS_ACCESS_KEY_ID, AWS_REGION,
// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, profiles, instance roles); the
// URL's query may set region, endpoint, use_path_style and disable_https
// (the names gocloud.dev's s3blob uses) and wins over the environment.
//
// The client is built here rather than by s3blob's URL opener so that its
// retryer is ours: more attempts than the SDK's 3, no retry quota (a
// batch job must outlast a long throttling episode, not give up after a
// burst), and every retry counted for the summary.
func openS3(ctx context.Context, bucket string, q url.Values) (*blob.Bucket, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return &countingRetryer{retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.MaxBackoff = maxBackoff()
				o.RateLimiter = ratelimit.None
			})}
		}),
	}
	if r := q.Get("region"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		// Custom endpoints (MinIO, Ceph, versitygw, R2) rarely care, and
		// the SDK refuses to sign without one.
		cfg.Region = "us-east-1"
	}
	endpoint := q.Get("endpoint")
	if endpoint == "" {
		endpoint = firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	}
	// Path-style addressing (http://host/bucket/key) is what S3-compatible
	// servers on a plain host name support; virtual-hosted style needs
	// wildcard DNS. So a custom endpoint defaults to path style, AWS itself
	// to virtual-hosted; use_path_style (or $ONECORE_S3_PATH_STYLE) decides
	// when given.
	pathStyle := endpoint != ""
	for _, v := range []string{os.Getenv("ONECORE_S3_PATH_STYLE"), q.Get("use_path_style"), q.Get("s3ForcePathStyle")} {
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("use_path_style=%q: want true or false", v)
		}
		pathStyle = b
	}
	disableHTTPS := false
	if v := q.Get("disable_https"); v != "" {
		if disableHTTPS, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("disable_https=%q: want true or false", v)
		}
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
		o.EndpointOptions.DisableHTTPS = disableHTTPS
		// Servers other than AWS often send no response checksum; the SDK
		// would log a line per GET saying so.
		o.DisableLogOutputChecksumValidationSkipped = true
		if endpoint != "" {
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
			// The same for s3Upload, which calls the client directly,
			// as for s3blob (below).
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		}
	})
	sopts := &s3blob.Options{}
	if endpoint != "" {
		// Third-party servers do not all know the newer flexible
		// checksums; send them only when an operation requires one.
		sopts.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}
	return s3blob.OpenBucket(ctx, client, bucket, sopts)
}

// openOther opens a non-S3 bucket through gocloud.dev's URL mux, which
// knows only the drivers linked into the binary.
func openOther(ctx context.Context, scheme, bucket string, q url.Values) (*blob.Bucket, error) {
	u := scheme + "://" + bucket
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	if !blob.DefaultURLMux().ValidBucketScheme(scheme) {
		return nil, fmt.Errorf("%s:// is recognised but this build of onecore has no %s driver: build it with `go build -tags cloud` (only s3:// is built in by default)", scheme, scheme)
	}
	return blob.OpenBucket(ctx, u)
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}
