//go:build cloud

package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// These helpers start the Google Cloud Storage and Azure Blob Storage
// emulators for the tests of onecore's gs:// and azblob:// drivers, which
// are built only with -tags cloud (so are these helpers and those tests).

// FakeGCSServerVersion is the fake-gcs-server release scripts/test-deps.sh
// installs (a Google Cloud Storage emulator in Go, BSD-2-Clause).
const FakeGCSServerVersion = "v1.56.1"

// AzuriteVersion is the npm azurite release scripts/test-deps.sh installs
// (Microsoft's Azure Storage emulator, MIT).
const AzuriteVersion = "3.37.0"

// Cloud is a storage emulator started for a test, and the environment
// that points gocloud.dev's driver (in this process or in a child onecore)
// at it.
type Cloud struct {
	Scheme   string // "gs" or "azblob"
	Endpoint string // http://127.0.0.1:PORT
	env      []string
	create   func(t testing.TB, name string)
}

// Env is the environment for a child onecore.
func (c *Cloud) Env() []string { return append([]string(nil), c.env...) }

// Setenv sets Env in this test process.
func (c *Cloud) Setenv(t testing.TB) {
	t.Helper()
	setenv(t, c.env)
}

// Bucket creates a bucket (a container, for Azure) with a name unique to
// this call and returns its URL, SCHEME://NAME.
func (c *Cloud) Bucket(t testing.TB) string {
	t.Helper()
	name := bucketName()
	c.create(t, name)
	return c.Scheme + "://" + name
}

// StartGCS starts fake-gcs-server on loopback (objects in memory), stopped
// when the test ends. gocloud.dev's gcsblob talks to it without
// credentials because STORAGE_EMULATOR_HOST is set.
func StartGCS(t testing.TB) *Cloud {
	t.Helper()
	bin := GoTool(t, "fake-gcs-server", "github.com/fsouza/fake-gcs-server@"+FakeGCSServerVersion)
	addr := freeAddr(t)
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(bin, "-scheme", "http", "-host", host, "-port", port, "-backend", "memory",
		"-public-host", addr, "-external-url", "http://"+addr, "-log-level", "warn")
	startServer(t, "fake-gcs-server", addr, cmd)
	c := &Cloud{Scheme: "gs", Endpoint: "http://" + addr,
		env: []string{"STORAGE_EMULATOR_HOST=" + addr, "GOOGLE_CLOUD_PROJECT=onecore-test"}}
	c.create = func(t testing.TB, name string) {
		t.Helper()
		body := fmt.Sprintf(`{"name":%q}`, name)
		resp, err := http.Post(c.Endpoint+"/storage/v1/b?project=onecore-test", "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatalf("create gs bucket %s: %v", name, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("create gs bucket %s: %s", name, resp.Status)
		}
	}
	return c
}

// Azurite's well-known development account (public, documented by
// Microsoft for the emulator; it grants nothing anywhere else).
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// StartAzurite starts Azurite's blob service (npm, under the test
// dependencies' node_modules) on loopback, stopped when the test ends.
func StartAzurite(t testing.TB) *Cloud {
	t.Helper()
	bin := filepath.Join(NodeModules(t), ".bin", "azurite-blob")
	addr := freeAddr(t)
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(bin, "--blobHost", host, "--blobPort", port, "--location", t.TempDir(),
		"--skipApiVersionCheck", "--disableProductStyleUrl", "--silent")
	startServer(t, "azurite", addr, cmd)
	c := &Cloud{Scheme: "azblob", Endpoint: "http://" + addr, env: []string{
		"AZURE_STORAGE_ACCOUNT=" + azuriteAccount,
		"AZURE_STORAGE_KEY=" + azuriteKey,
		"AZURE_STORAGE_DOMAIN=" + addr,
		"AZURE_STORAGE_PROTOCOL=http",
		"AZURE_STORAGE_IS_LOCAL_EMULATOR=true",
	}}
	c.create = func(t testing.TB, name string) {
		t.Helper()
		cred, err := azblob.NewSharedKeyCredential(azuriteAccount, azuriteKey)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := azblob.NewClientWithSharedKeyCredential(c.Endpoint+"/"+azuriteAccount, cred, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CreateContainer(context.Background(), name, nil); err != nil {
			t.Fatalf("create azblob container %s: %v", name, err)
		}
	}
	return c
}
