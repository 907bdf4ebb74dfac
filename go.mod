module github.com/ccbridge/ccbridge

go 1.26

require (
	github.com/creack/pty v1.1.24
	github.com/google/uuid v1.6.0
	github.com/tidwall/gjson v1.20.0
	github.com/tidwall/sjson v1.2.5
	go.etcd.io/bbolt v1.4.3
)

require (
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	golang.org/x/sys v0.29.0 // indirect
)
