#include "tools/mpi.h"

#include <cstdlib>
#include <string>

#ifdef PARASIM_HAVE_MPI
#include <mpi.h>
#endif

namespace parasim {

#ifdef PARASIM_HAVE_MPI

namespace {

bool under_launcher() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr; }

// Every part's outcomes, as one JSON array of [index, outcome] per part, gathered on part 0.
void gather_outcomes(std::vector<std::optional<Outcome>>& slots, int part, int parts) {
  std::string mine;
  if (part != 0) {
    Json a = Json::array();
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (slots[i]) a.push_back({i, outcome_json(*slots[i])});
    mine = a.dump();
  }
  const int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(parts)), offsets(static_cast<std::size_t>(parts));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int k = 0; k < parts; ++k) {
    offsets[static_cast<std::size_t>(k)] = total;
    total += lens[static_cast<std::size_t>(k)];
  }
  std::string all(part == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (part != 0) return;
  for (int k = 1; k < parts; ++k) {
    const auto at = static_cast<std::size_t>(offsets[static_cast<std::size_t>(k)]);
    for (const Json& e : Json::parse(all.substr(at, static_cast<std::size_t>(lens[static_cast<std::size_t>(k)]))))
      slots[e.at(0).get<std::size_t>()] = outcome_from_json(e.at(1));
  }
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  if (!under_launcher()) return;
  MPI_Init(argc, argv);
  started_ = true;
  int part = 0, parts = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &part);
  MPI_Comm_size(MPI_COMM_WORLD, &parts);
  if (parts < 2) return;
  dist_.emplace();
  dist_->part = part;
  dist_->parts = parts;
  dist_->gather = [part, parts](std::vector<std::optional<Outcome>>& slots) { gather_outcomes(slots, part, parts); };
}

MpiSession::~MpiSession() {
  if (started_) MPI_Finalize();
}

#else

MpiSession::MpiSession(int*, char***) {}
MpiSession::~MpiSession() = default;

#endif

}  // namespace parasim
