// The occupancy arithmetic of register_cap.cpp: how many programs an SM
// holds at a register count, and the cap the occupancy step tries (a count
// at most 8 registers below ptxas's choice at which one more program fits).
#include "../../../lib/target/nvidia/register_cap.h"

#include <gtest/gtest.h>

using namespace tritium::nvidia;

namespace {
const int64_t kH200 = sharedPerSM("sm_90a");
} // namespace

TEST(RegisterCap, ProgramsPerSMCountsRegistersEightAtATime) {
  // 512 threads: 64 registers fill half the 64K file, 65-72 take 72 a thread.
  EXPECT_EQ(programsPerSM(512, 64), 2);
  EXPECT_EQ(programsPerSM(512, 66), 1);
  EXPECT_EQ(programsPerSM(512, 72), 1);
  // 128 threads: at most 2048 threads, so 16 programs however few registers.
  EXPECT_EQ(programsPerSM(128, 16), 16);
  EXPECT_EQ(programsPerSM(128, 32), 16);
  EXPECT_EQ(programsPerSM(128, 40), 12);
  EXPECT_EQ(programsPerSM(128, 255), 2);
}

TEST(RegisterCap, OccupancyStepCapsJustAboveAStep) {
  // GEGLU's backward at 16 warps: 66 registers, one program; 64 holds two.
  EXPECT_EQ(occupancyStepCap(512, 66, 0, kH200), 64);
  EXPECT_EQ(occupancyStepCap(512, 72, 0, kH200), 64);
  // 8 warps at 130 registers: one program (136 allocated); two fit at 128.
  EXPECT_EQ(occupancyStepCap(256, 130, 0, kH200), 128);
  // 4 warps at 130: three programs (136 x 128 x 3 = 52K); a fourth at 128.
  EXPECT_EQ(occupancyStepCap(128, 130, 0, kH200), 0);
  // 8 warps at 88: two programs; a third fits at 85, 80 in units of 8.
  EXPECT_EQ(occupancyStepCap(256, 88, 0, kH200), 80);
}

TEST(RegisterCap, NoStepWhereTheCutIsDeepOrNothingIsGained) {
  // 73 registers at 512 threads: the step to 2 programs is 9 below.
  EXPECT_EQ(occupancyStepCap(512, 73, 0, kH200), 0);
  EXPECT_EQ(occupancyStepCap(512, 54, 0, kH200), 0);  // 2 programs; 3 need 40
  // Three programs or more: a step would add a third or less; none is tried
  // (most kernels with more than 32 registers at 4 warps sit near a step).
  EXPECT_EQ(occupancyStepCap(128, 40, 0, kH200), 0);
  EXPECT_EQ(occupancyStepCap(128, 48, 0, kH200), 0);
  EXPECT_EQ(occupancyStepCap(256, 72, 0, kH200), 0);
  // Full occupancy by threads already: nothing to gain.
  EXPECT_EQ(occupancyStepCap(128, 32, 0, kH200), 0);
  EXPECT_EQ(occupancyStepCap(1024, 32, 0, kH200), 0);
  // Shared memory holds one program only: no step however close.
  EXPECT_EQ(occupancyStepCap(512, 66, 150 * 1024, kH200), 0);
  // ... but a second program's worth of it lets the step stand.
  EXPECT_EQ(occupancyStepCap(512, 66, 100 * 1024, kH200), 64);
  EXPECT_EQ(occupancyStepCap(512, 0, 0, kH200), 0);
}

TEST(RegisterCap, SharedMemoryPerSMFollowsTheTarget) {
  EXPECT_EQ(sharedPerSM("sm_90a"), 228 * 1024);
  EXPECT_EQ(sharedPerSM("sm_80"), 164 * 1024);
  EXPECT_EQ(sharedPerSM("sm_89"), 100 * 1024);
  // 90 KB a program: two fit on an H100's SM, one on an A100's.
  EXPECT_EQ(occupancyStepCap(512, 66, 90 * 1024, sharedPerSM("sm_90a")), 64);
  EXPECT_EQ(occupancyStepCap(512, 66, 90 * 1024, sharedPerSM("sm_80")), 0);
}
