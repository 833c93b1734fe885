// The C sources of the small static programs the test rootfs gets in /bin
// (built by sandbox_support.cpp's build_probe with the host's cc): each
// tries, from inside a box, what busybox cannot.
#pragma once

namespace corral::test::sandbox {

extern const char* const kSuidProbeSource;
extern const char* const kConnectProbeSource;
extern const char* const kSetidProbeSource;
extern const char* const kKernelProbeSource;
extern const char* const kConnHoldSource;

}  // namespace corral::test::sandbox
