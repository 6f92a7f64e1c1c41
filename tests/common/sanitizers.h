// TYCHE_ASAN is 1 in a build with AddressSanitizer (gcc defines __SANITIZE_ADDRESS__, clang has
// __has_feature): tests of what happens when a 4 EiB allocation fails skip there, since the
// sanitizer aborts on such a request by default.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TYCHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TYCHE_ASAN 1
#endif
#endif
#ifndef TYCHE_ASAN
#define TYCHE_ASAN 0
#endif
