// A project's build files read for the switches that turn its CUDA on or off, and its CUDA
// sources counted. The lines below are as the projects' own setup.py / CMakeLists.txt write them.
#include <gtest/gtest.h>

#include "probe/fake_machine.h"
#include "project/build_files.h"

using namespace opforge;
using project::Switch;

TEST(ProjectBuildFiles, TorchExtensionSwitchesInTheFormsSetupPyFilesUse) {
  const std::string setup_py =
      "import os\n"
      "from torch.utils.cpp_extension import CUDA_HOME, CUDAExtension\n"
      "force_cuda = os.getenv(\"FORCE_CUDA\", \"0\") == \"1\"\n"
      "BUILD_CUDA_EXT = int(os.environ.get('BUILD_CUDA_EXT', '1')) == 1\n"
      "SKIP_CUDA_BUILD = os.getenv(\"FLASH_ATTENTION_SKIP_CUDA_BUILD\", \"FALSE\") == \"TRUE\"\n"
      "if \"APEX_CUDA_EXT\" in os.environ:\n"
      "    pass\n"
      "home = os.environ[\"CUDA_HOME\"]\n"
      "arches = os.environ.get(\"TORCH_CUDA_ARCH_LIST\", \"\")\n"
      "jobs = os.environ.get(\"MAX_JOBS\")\n"
      "again = os.getenv(\"FORCE_CUDA\")\n";
  const auto found = project::find_switches("setup.py", setup_py);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[0], (Switch{"FORCE_CUDA", "setup.py", 3, "force_cuda = os.getenv(\"FORCE_CUDA\", \"0\") == \"1\"",
                              false, false}));
  EXPECT_EQ(found[1].name, "BUILD_CUDA_EXT");
  EXPECT_EQ(found[1].line, 4);
  EXPECT_EQ(found[2].name, "FLASH_ATTENTION_SKIP_CUDA_BUILD");
  EXPECT_TRUE(found[2].turns_off);
  EXPECT_EQ(found[3].name, "APEX_CUDA_EXT");
  EXPECT_EQ(found[3].line, 6);
}

TEST(ProjectBuildFiles, CMakeOptionsAndEnvironmentReads) {
  const std::string cmake =
      "cmake_minimum_required(VERSION 3.18)\n"
      "option(GGML_CUDA \"ggml: use CUDA\" OFF)\n"
      "option(GGML_NATIVE \"ggml: optimize the build for the current system\" ON)\n"
      "if(DEFINED ENV{CUDAARCHS})\n"
      "  set(x $ENV{MYPROJ_WITH_CUDA})\n"
      "endif()\n"
      "set(dir $ENV{CUDA_HOME})\n";
  const auto found = project::find_switches("CMakeLists.txt", cmake);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0],
            (Switch{"GGML_CUDA", "CMakeLists.txt", 2, "option(GGML_CUDA \"ggml: use CUDA\" OFF)", false, true}));
  EXPECT_EQ(found[1].name, "MYPROJ_WITH_CUDA");
  EXPECT_FALSE(found[1].cmake_option);
}

TEST(ProjectBuildFiles, ReadsTheRootsBuildFilesAndCountsCudaSources) {
  probe::FakeFileSystem fs;
  fs.add_file("/p/setup.py", "import os\nif os.environ.get('FORCE_CUDA') == '1':\n    pass\n");
  fs.add_file("/p/csrc/b.cu", "");
  fs.add_file("/p/csrc/a.cu", "");
  fs.add_file("/p/csrc/common.cuh", "");
  fs.add_file("/p/csrc/host.cpp", "");
  fs.add_file("/p/build/temp/gen.cu", "");  // a build folder's copy is not the project's
  fs.add_file("/p/.git/x.cu", "");
  const auto files = project::read_build_files(fs, "/p");
  ASSERT_EQ(files.switches.size(), 1u);
  EXPECT_EQ(files.switches[0].name, "FORCE_CUDA");
  EXPECT_EQ(files.switches[0].line, 2);
  EXPECT_EQ(files.cuda_sources, 3u);
  EXPECT_EQ(files.cuda_source_sample, (std::vector<std::string>{"csrc/a.cu", "csrc/b.cu", "csrc/common.cuh"}));
  EXPECT_FALSE(files.walk_cut);
}

TEST(ProjectBuildFiles, TheHintSaysWhatToWriteAndWhatIsSetAlready) {
  const std::vector<Switch> switches = {
      {"FORCE_CUDA", "setup.py", 3, "force_cuda = os.getenv(\"FORCE_CUDA\", \"0\") == \"1\"", false, false},
      {"FLASH_ATTENTION_SKIP_CUDA_BUILD", "setup.py", 5, "SKIP = os.getenv(...)", true, false},
      {"GGML_CUDA", "CMakeLists.txt", 2, "option(GGML_CUDA \"ggml: use CUDA\" OFF)", false, true}};
  EXPECT_EQ(project::switch_hint(switches, {{"FLASH_ATTENTION_SKIP_CUDA_BUILD", "TRUE"}}),
            "the project's build files read these switches (projects like this compile CUDA only when told to, "
            "or when they see a GPU):\n"
            "    FORCE_CUDA, setup.py:3 (force_cuda = os.getenv(\"FORCE_CUDA\", \"0\") == \"1\"): "
            "[build.env] FORCE_CUDA = \"1\"\n"
            "    FLASH_ATTENTION_SKIP_CUDA_BUILD, setup.py:5 (SKIP = os.getenv(...)): set to \"TRUE\" for this build: "
            "remove it\n"
            "    CMake option GGML_CUDA, CMakeLists.txt:2 (option(GGML_CUDA \"ggml: use CUDA\" OFF)): "
            "[build.env] CMAKE_ARGS = \"-DGGML_CUDA=ON\"");
  EXPECT_EQ(project::switch_hint({switches[0]}, {{"FORCE_CUDA", "1"}}),
            "the project's build files read this switch (projects like this compile CUDA only when told to, or when "
            "they see a GPU):\n"
            "    FORCE_CUDA, setup.py:3 (force_cuda = os.getenv(\"FORCE_CUDA\", \"0\") == \"1\"): set to \"1\" for "
            "this build");
  EXPECT_EQ(project::switch_hint({}, {}), "");
}
