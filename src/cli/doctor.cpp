// `opforge doctor`: prints doctor::examine's report as text or JSON.
#include <iostream>

#include "cli/command.h"
#include "doctor/render.h"

namespace opforge::cli {
namespace {

Registrar doctor_command{{
    "doctor",
    "report toolkits, torch's CUDA, compilers, GPUs, libraries and which ops can be built",
    [](CLI::App& app) -> Runner {
      struct Args {
        bool json = false;
        std::string python = "python3";
        std::string recipe;
      };
      auto args = std::make_shared<Args>();
      app.add_flag("--json", args->json, "print JSON");
      app.add_option("--python", args->python, "the Python whose torch is read (default python3)");
      app.add_option("--recipe", args->recipe, "decide ops for this recipe (default: the bundled one)");
      return [args]() -> Status {
        auto j = doctor::to_json(doctor::examine(probe::real_machine(), args->python, args->recipe));
        if (args->json) std::cout << j.dump(2) << "\n";
        else std::cout << doctor::to_text(j);
        return {};
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
