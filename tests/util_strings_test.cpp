// util/strings.h: the table column the op listings share.
#include <gtest/gtest.h>

#include "util/strings.h"

namespace opforge {
namespace {

TEST(Strings, AColumnPadsToItsWidthAndKeepsOneSpaceAfterALongerWord) {
  EXPECT_EQ(strings::column("build", 8), "build   ");
  EXPECT_EQ(strings::column("skipped", 8), "skipped ");
  EXPECT_EQ(strings::column("not requested", 8), "not requested ");
  EXPECT_EQ(strings::column("", 3), "   ");
}

}  // namespace
}  // namespace opforge
