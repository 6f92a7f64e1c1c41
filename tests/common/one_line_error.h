// A refusal's test: `f` throws tyche::Error whose message holds `expect` and is one line.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "support/error.h"

namespace tyche::testing {

inline void expect_one_line_error(const std::function<void()>& f, const std::string& expect) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << expect;
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_THAT(m, ::testing::HasSubstr(expect));
    EXPECT_THAT(m, ::testing::Not(::testing::HasSubstr("\n"))) << m;
  }
}

}  // namespace tyche::testing
