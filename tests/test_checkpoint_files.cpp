// The names a checkpoint goes by outside its life as checkpoint-<step> (train/checkpoint.h):
// hidden while written or deleted, never listed, and cleared once their writer is gone.
// tests/reliability/crash_consistency.sh kills real runs inside these windows; this pins each
// window down without relying on where a random kill lands.
#include <sys/wait.h>
#include <unistd.h>

#include "test_util_fs.h"
#include "train/checkpoint.h"

namespace strata {
namespace {

using test::ScratchDir;
namespace fs = std::filesystem;

// The pid of a process that has exited (and been reaped).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

void fake_checkpoint(const fs::path& dir) {
  fs::create_directories(dir);
  test::write_text((dir / "trainer_state.json").string(), "{}\n");
}

TEST(CheckpointFiles, HiddenDirectoriesAreNeverCheckpointsAndDeadWritersDebrisGoes) {
  ScratchDir d;
  const fs::path out = d.path();
  const std::string dead = std::to_string(dead_pid()), alive = std::to_string(::getppid());
  // A save killed before its rename (the only thing a kill before the first checkpoint
  // leaves), a rotation killed mid-delete, a save still running in another process.
  fake_checkpoint(out / (".tmp-checkpoint-6-" + dead));
  fake_checkpoint(out / (".deleting-checkpoint-3-" + dead));
  fake_checkpoint(out / (".tmp-checkpoint-12-" + alive));
  EXPECT_TRUE(list_checkpoints(out.string()).empty()) << "a hidden directory was taken for a checkpoint";
  fake_checkpoint(out / "checkpoint-9");
  EXPECT_EQ(list_checkpoints(out.string()), std::vector<std::string>{(out / "checkpoint-9").string()});

  remove_checkpoint_debris(out.string());
  EXPECT_FALSE(fs::exists(out / (".tmp-checkpoint-6-" + dead)));
  EXPECT_FALSE(fs::exists(out / (".deleting-checkpoint-3-" + dead)));
  EXPECT_TRUE(fs::exists(out / (".tmp-checkpoint-12-" + alive))) << "a running writer's directory was removed";
  EXPECT_TRUE(fs::exists(out / "checkpoint-9"));
}

TEST(CheckpointFiles, RemovingACheckpointLeavesNoPartOfItUnderItsName) {
  ScratchDir d;
  const fs::path out = d.path();
  fake_checkpoint(out / "checkpoint-3");
  fake_checkpoint(out / "checkpoint-6");
  rotate_checkpoints(out.string(), 1, "");
  EXPECT_EQ(list_checkpoints(out.string()), std::vector<std::string>{(out / "checkpoint-6").string()});
  for (const auto& e : fs::directory_iterator(out)) EXPECT_EQ(e.path().filename(), "checkpoint-6");
}

}  // namespace
}  // namespace strata
