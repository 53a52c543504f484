// Builds the test bed's image tools (see ../build.sh, ../images.sh): pause, the pod sandbox
// process, and oci-image, which packs a directory into an image tarball for `ctr images import`.
module redis-operator/hack/cluster/images

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
)
