// Command latencyproxy stands in front of an S3 server and holds every
// request for a fixed time before forwarding it, so that a benchmark on
// loopback sees the time to first byte of a real object store (tens of
// milliseconds a request) instead of a fraction of one. Connections are
// kept alive on both sides, as they are to a real store.
//
//	latencyproxy -target http://127.0.0.1:7070 -delay 20ms -listen 127.0.0.1:7071
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (its URL is printed on stdout)")
	target := flag.String("target", "", "the S3 server, http://host:port")
	delay := flag.Duration("delay", 20*time.Millisecond, "time every request is held before it is forwarded")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		fmt.Fprintf(os.Stderr, "latencyproxy: -target %q: want http://host:port\n", *target)
		os.Exit(2)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	// Keep as many connections to the server open as clients hold to us.
	rp.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}
	rp.FlushInterval = -1 // stream bodies through as they come
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s\n", l.Addr())
	log.Fatal(http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(*delay)
		rp.ServeHTTP(w, r)
	})))
}
