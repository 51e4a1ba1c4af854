#include "tools/commands.h"

namespace parasim {

void add_check_commands(CLI::App&, Context&) {}

}  // namespace parasim
