#include "sim/core/engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace parasim {

namespace {

struct Event {
  Time t;
  std::int64_t seq;
  OpId op;
  std::uint32_t version;  // stale when the op was rescheduled since
};

// A binary min-heap of events by (time, sequence). The keys are unique, so events come out in the
// order any priority queue gives. The loop pops an op's end and then, nearly always, pushes the
// end of the next op on its stream: a popped event stays in place until the next push takes its
// slot and sifts down once (one sift where a pop and a push make two, each from the root or a leaf).
class EventQueue {
 public:
  bool empty() {
    settle();
    return v_.empty();
  }
  const Event& top() {
    settle();
    return v_.front();
  }
  void pop() { hole_ = true; }
  void push(const Event& e) {
    if (hole_) {
      hole_ = false;
      sift_down(e);
      return;
    }
    size_t i = v_.size();
    v_.push_back(e);
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!before(e, v_[parent])) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = e;
  }

 private:
  static bool before(const Event& a, const Event& b) { return a.t != b.t ? a.t < b.t : a.seq < b.seq; }
  // The popped root's slot filled by the last event.
  void settle() {
    if (!hole_) return;
    hole_ = false;
    const Event last = v_.back();
    v_.pop_back();
    if (!v_.empty()) sift_down(last);
  }
  // e placed at the root (whose event has left) and moved down to its place.
  void sift_down(const Event& e) {
    const size_t n = v_.size();
    size_t i = 0;
    for (size_t c = 1; c < n; c = 2 * i + 1) {
      if (c + 1 < n && before(v_[c + 1], v_[c])) ++c;
      if (!before(v_[c], e)) break;
      v_[i] = v_[c];
      i = c;
    }
    v_[i] = e;
  }

  std::vector<Event> v_;
  bool hole_ = false;  // v_.front() has been popped
};

// What the event loop reads and writes of an op, packed in 32 bytes (Op has 112): the loop visits
// ops in dependency order, far from program order, so each visit is a cache miss on the one record
// it touches (its dependency count and event version included).
struct HotOp {
  Time duration = 0;
  std::int32_t rank = 0;
  std::int32_t collective = -1;
  std::uint32_t queue = 0;      // rank * kStreams + stream
  std::int32_t remaining = 0;   // dependencies not yet ended
  std::uint32_t version = 0;    // bumped when the op is rescheduled: older events are stale
  std::int8_t shared_link = -1;
  std::uint8_t flags = 0;
  char host = 0;                // a HostState, with Program::host
};
static_assert(sizeof(HotOp) == 32);
// Where an op stands with its rank's host thread (Program::host): not yet asked, a wake-up pending
// at its issue time, issued.
enum HostState : char { kHostUnchecked = 0, kHostWaiting = 1, kHostIssued = 2 };
enum HotFlag : std::uint8_t { kCommStream = 1, kSlowable = 2, kCpComm = 4, kMemAtStart = 8, kMemAtEnd = 16, kFused = 32 };

class Run {
 public:
  Run(const Program& p, const EngineOptions& o) : p_(p), o_(o), has_host_(!p.host.empty()) {
    const size_t n = p.ops.size();
    const size_t nr = p.ranks.size();
    if (has_host_ && p.host.size() != n) throw std::logic_error("host issue times not one per op");
    if (has_host_ && p.fused_ops > 0) throw std::logic_error("fused ops under the host launch model");
    if (p.fused_ops > 0) fused_time_.assign(n, -1);
    tl_.start.assign(n, -1);
    tl_.end.assign(n, -1);
    if (has_host_) {
      tl_.host_wait_before.assign(n, 0);
      tl_.host_wait_within.assign(n, 0);
      host_blocked_since_.assign(n, -1);
      host_deadline_.assign(n, -1);
      host_release_.assign(n, -1);
    }
    tl_.memory.resize(nr);
    hot_.reserve(n);
    // Successor lists and stream queues as arrays cut by offsets: counted, summed, then filled from
    // the last op back so that each list holds its ops in program order.
    succ_begin_.assign(n + 1, 0);
    queue_begin_.assign(nr * kStreams + 1, 0);
    bool shared = false;
    for (size_t i = 0; i < n; ++i) {
      const Op& op = p.ops[i];
      if (static_cast<std::uint32_t>(op.rank) >= nr) throw std::logic_error("op with invalid rank");
      const HotOp& h = hot_.emplace_back(hot_of(op));
      shared |= op.shared_link >= 0;
      if (op.seg_count > 0) fused_at(i, op);
      ++queue_begin_[h.queue];
      if (op.deps.empty()) continue;  // most ops: their stream's order is their only dependency
      for (OpId d : op.deps) {
        if (static_cast<std::uint32_t>(d) >= n) throw std::logic_error("op with invalid dependency");
        ++succ_begin_[static_cast<size_t>(d)];
      }
    }
    for (size_t i = 0; i < n; ++i) succ_begin_[i + 1] += succ_begin_[i];
    for (size_t q = 0; q + 1 < queue_begin_.size(); ++q) queue_begin_[q + 1] += queue_begin_[q];
    succ_.resize(static_cast<size_t>(succ_begin_[n]));
    queue_ops_.resize(n);
    for (size_t i = n; i-- > 0;) {
      if (const Deps& deps = p.ops[i].deps; !deps.empty())
        for (OpId d : deps) succ_[static_cast<size_t>(--succ_begin_[static_cast<size_t>(d)])] = static_cast<OpId>(i);
      queue_ops_[static_cast<size_t>(--queue_begin_[hot_[i].queue])] = static_cast<OpId>(i);
    }
    head_.assign(queue_begin_.begin(), queue_begin_.end() - 1);
    busy_.assign(nr * kStreams, 0);
    arrived_.assign(p.collectives.size(), 0);
    if (shared) remaining_work_.assign(n, 0.0);
    sharing_.resize(nr);
    share_last_.assign(nr, 0);
    cur_.assign(nr, {});
    total_.assign(nr, 0);
    slowed_op_.assign(nr, -1);
    slowed_work_.assign(nr, 0.0);
    slowed_last_.assign(nr, 0);
    slowed_rate_.assign(nr, 0);
    if (p.fused_ops > 0) {
      tl_.seg_end.assign(static_cast<size_t>(p.fused_segments), -1);
      fused_.assign(nr, {});
    }
    dirty_.assign(nr, 0);
    for (size_t r = 0; r < nr; ++r)
      for (int c = 0; c < kMemCats; ++c)
        if (p.ranks[r].static_mem[static_cast<size_t>(c)] != 0)
          mem(static_cast<std::int32_t>(r), MemDelta{static_cast<MemCat>(c), p.ranks[r].static_mem[static_cast<size_t>(c)]});
  }

  Timeline go() {
    for (size_t q = 0; q < busy_.size(); ++q) try_start(q);
    retime_dirty();
    while (!heap_.empty()) {
      const Event e = heap_.top();
      heap_.pop();
      if (e.version != hot_[static_cast<size_t>(e.op)].version) continue;  // rescheduled
      now_ = e.t;
      if (has_host_ && hot_[static_cast<size_t>(e.op)].host == kHostWaiting) {  // the host has issued it
        hot_[static_cast<size_t>(e.op)].host = kHostIssued;
        try_start(hot_[static_cast<size_t>(e.op)].queue);
      } else if (has_host_ && host_deadline_[static_cast<size_t>(e.op)] > now_) {
        hold_for_host(e.op);
      } else {
        finish(e.op);
      }
      if (!dirty_list_.empty()) retime_dirty();
    }
    for (size_t i = 0; ended_ < p_.ops.size() && i < p_.ops.size(); ++i) {  // a deadlock: name the first op never run
      if (tl_.end[i] < 0) {
        const Op& op = p_.ops[i];
        throw std::logic_error("program deadlock: op " + std::to_string(i) + " (" + p_.labels[static_cast<size_t>(op.label)] +
                               ", rank " + std::to_string(op.rank) + ", stream " + stream_name(op.stream) +
                               ") never ran");
      }
    }
    tl_.makespan = now_;
    return std::move(tl_);
  }

 private:
  HotOp hot_of(const Op& op) const {
    HotOp h;
    h.duration = op.duration;
    h.rank = op.rank;
    h.collective = op.collective;
    h.queue = static_cast<std::uint32_t>(static_cast<size_t>(op.rank) * kStreams + static_cast<size_t>(op.stream));
    h.remaining = static_cast<std::int32_t>(op.deps.size());
    h.shared_link = op.shared_link;
    const std::uint8_t not_slowable = ((op.collective >= 0) || (op.shared_link >= 0)) ? kSlowable : 0;
    h.flags = static_cast<std::uint8_t>((kind_flags_[static_cast<size_t>(op.stream) * kPhases + static_cast<size_t>(op.phase)] & ~not_slowable) |
                                        (op.at_start.bytes != 0) * kMemAtStart | (op.at_end.bytes != 0) * kMemAtEnd);
    if (op.seg_count > 0) h.flags = static_cast<std::uint8_t>((h.flags & ~kSlowable) | kFused);  // its segments say (fused_plan)
    return h;
  }
  // The flags an op takes from its stream and phase alone. kSlowable (the overlap slowdown below):
  // a compute-stream op outside the communication phases while the profile has a slowdown; hot_of
  // clears it for a collective or an op on a shared link.
  std::array<std::uint8_t, kStreams * kPhases> kind_flags() const {
    std::array<std::uint8_t, kStreams * kPhases> f{};
    for (int s = 0; s < kStreams; ++s)
      for (int ph = 0; ph < kPhases; ++ph) {
        const auto st = static_cast<Stream>(s);
        const auto phase = static_cast<Phase>(ph);
        f[static_cast<size_t>(s * kPhases + ph)] =
            static_cast<std::uint8_t>((st == Stream::Comm) * kCommStream | (phase == Phase::CpComm) * kCpComm |
                                      (slows_ && st == Stream::Compute && !phase_is_comm(phase)) * kSlowable);
      }
    return f;
  }

  void mem(std::int32_t rank, const MemDelta& d) {
    if (d.bytes == 0) return;
    auto& c = cur_[static_cast<size_t>(rank)];
    c[static_cast<size_t>(d.cat)] += d.bytes;
    const Bytes total = total_[static_cast<size_t>(rank)] += d.bytes;
    RankMemory& rm = tl_.memory[static_cast<size_t>(rank)];
    Bytes& hw = rm.high_water[static_cast<size_t>(d.cat)];
    hw = std::max(hw, c[static_cast<size_t>(d.cat)]);
    if (o_.memory_curve) {
      if (!rm.curve.empty() && rm.curve.back().t == now_) rm.curve.back().total = total;
      else rm.curve.push_back({now_, total});
    }
    if (total > rm.peak) {
      rm.peak = total;
      rm.peak_time = now_;
      rm.at_peak = c;
    }
  }

  [[gnu::always_inline]] void schedule(OpId id, Time duration) {
    const HotOp& op = hot_[static_cast<size_t>(id)];
    tl_.start[static_cast<size_t>(id)] = now_;
    if (op.flags & kMemAtStart) mem(op.rank, p_.ops[static_cast<size_t>(id)].at_start);
    if (op.flags & kFused) {
      fused_start(id);
      return;
    }
    ++tl_.events;
    if (op.shared_link >= 0) {
      share_update(op.rank);  // account progress so far at the old sharing level
      remaining_work_[static_cast<size_t>(id)] = static_cast<double>(duration);
      sharing_[static_cast<size_t>(op.rank)].push_back(id);
      share_reschedule(op.rank);
      return;
    }
    if (op.flags & kSlowable) {
      const auto r = static_cast<size_t>(op.rank);
      slowed_op_[r] = id;
      slowed_work_[r] = static_cast<double>(duration);
      slowed_last_[r] = now_;
      slowed_rate_[r] = collective_running(op.rank);
      heap_.push({end_time(scaled(slowed_work_[r], slowed_rate_[r])), seq_++, id, hot_[static_cast<size_t>(id)].version});
      return;
    }
    heap_.push({end_time(duration), seq_++, id, hot_[static_cast<size_t>(id)].version});
  }

  // now + duration, refusing to pass kMaxTime (integer picoseconds must not overflow).
  Time end_time(Time duration) const {
    if (duration > kMaxTime - now_) past_range();
    return now_ + duration;
  }
  [[noreturn, gnu::cold, gnu::noinline]] void past_range() const {
    throw RangeError("the simulated step passes " + std::to_string(static_cast<double>(kMaxTime) / static_cast<double>(kPicosPerSecond)) +
                     " s, the simulator's range (is the sequence, batch or model that large?)");
  }

  // Processor sharing on a rank's shared link: progress of every active op since the last change.
  void share_update(std::int32_t rank) {
    auto& act = sharing_[static_cast<size_t>(rank)];
    auto& last = share_last_[static_cast<size_t>(rank)];
    if (!act.empty()) {
      const double elapsed = static_cast<double>(now_ - last) / static_cast<double>(act.size());
      for (OpId o : act) remaining_work_[static_cast<size_t>(o)] = std::max(0.0, remaining_work_[static_cast<size_t>(o)] - elapsed);
    }
    last = now_;
  }
  void share_reschedule(std::int32_t rank) {
    const auto& act = sharing_[static_cast<size_t>(rank)];
    const double k = static_cast<double>(act.size());
    for (OpId o : act) {
      ++hot_[static_cast<size_t>(o)].version;
      const double left = remaining_work_[static_cast<size_t>(o)] * k;
      const auto finish_at = end_time(left < static_cast<double>(kMaxTime) ? round_half_up(left) : kMaxTime);
      heap_.push({finish_at, seq_++, o, hot_[static_cast<size_t>(o)].version});
    }
  }

  // Compute kernels beside a running NCCL collective lose SMs and HBM bandwidth to it: while the
  // rank's collective stream is busy (launched, including while it waits for its peers, as an NCCL
  // kernel spins on its SMs), its compute op progresses at 1 / (1 + slowdown) of its own speed.
  // Point-to-point transfers (pipeline sends and receives, context parallel's K/V ring; 1-2 NCCL
  // channels per peer) do not count. Which ops slow: kSlowable (kind_flags(), hot_of()).
  // The rank's communication stream runs an NCCL collective (context parallel's ring exchange is
  // point-to-point sends and receives, like the pipeline's).
  char collective_running(std::int32_t rank) const {
    const size_t q = static_cast<size_t>(rank) * kStreams + static_cast<size_t>(Stream::Comm);
    if (!busy_[q]) return 0;
    return !(hot_[static_cast<size_t>(queue_ops_[static_cast<size_t>(head_[q])])].flags & kCpComm);
  }
  Time scaled(double work, char slow) const {
    const double t = slow ? work * (1.0 + o_.overlap_compute_slowdown) : work;
    return t < static_cast<double>(kMaxTime) ? round_half_up(t) : kMaxTime;
  }
  void mark_dirty(std::int32_t rank) {
    if (o_.overlap_compute_slowdown <= 0.0 || dirty_[static_cast<size_t>(rank)]) return;
    dirty_[static_cast<size_t>(rank)] = 1;
    dirty_list_.push_back(rank);
  }
  // After an event: a rank whose collective stream started or stopped re-times its running compute
  // op from the work it has left.
  void retime_dirty() {
    for (std::int32_t rank : dirty_list_) {
      const auto r = static_cast<size_t>(rank);
      dirty_[r] = 0;
      const OpId id = slowed_op_[r];
      const char slow = collective_running(rank);
      if (!fused_.empty() && fused_[r].op >= 0 && slow != fused_[r].rate) fused_retime(rank, slow);
      if (id < 0 || slow == slowed_rate_[r]) continue;
      const double elapsed = static_cast<double>(now_ - slowed_last_[r]);
      slowed_work_[r] = std::max(0.0, slowed_work_[r] - (slowed_rate_[r] ? elapsed / (1.0 + o_.overlap_compute_slowdown) : elapsed));
      slowed_last_[r] = now_;
      slowed_rate_[r] = slow;
      ++hot_[static_cast<size_t>(id)].version;
      heap_.push({end_time(scaled(slowed_work_[r], slow)), seq_++, id, hot_[static_cast<size_t>(id)].version});
    }
    dirty_list_.clear();
  }

  void try_start(size_t q) {
    if (busy_[q] || head_[q] >= queue_begin_[q + 1]) return;
    const OpId id = queue_ops_[static_cast<size_t>(head_[q])];
    if (hot_[static_cast<size_t>(id)].remaining > 0) return;
    if (has_host_ && !host_ready(id)) return;
    busy_[q] = 1;
    const HotOp& op = hot_[static_cast<size_t>(id)];
    if (op.flags & kCommStream) mark_dirty(op.rank);
    if (op.collective < 0) {
      schedule(id, !has_host_ ? op.duration : host_bound_duration(id, op.duration));
      return;
    }
    const auto& members = p_.collectives[static_cast<size_t>(op.collective)];
    if (++arrived_[static_cast<size_t>(op.collective)] < members.size()) return;  // wait for the group
    for (OpId m : members) schedule(m, op.duration);
  }

  // The host thread's issue times (Program::host): measured from the end of the op's gate, which
  // has ended (the lowering makes it a dependency, or it is earlier on the op's own stream), or
  // from the release of the sync inside it (HostIssue::sync_at, at_release).
  Time host_base(OpId id) const {
    const OpId g = p_.host[static_cast<size_t>(id)].gate;
    if (g < 0) return 0;
    if (tl_.end[static_cast<size_t>(g)] < 0) throw std::logic_error("host issue gated on an op that has not ended");
    return p_.host[static_cast<size_t>(id)].at_release ? host_release_[static_cast<size_t>(g)] : tl_.end[static_cast<size_t>(g)];
  }
  // The earliest end the host allows the op that starts now (of `duration`): its last kernel's
  // issue, `last` after its base; with a sync inside it, released at the later of the host reaching
  // the sync and the GPU reaching it, the later of its last issue and its GPU work left after the
  // sync, which waits for the first kernel after it.
  Time host_end(OpId id, Time duration) {
    const auto i = static_cast<size_t>(id);
    const HostIssue& h = p_.host[i];
    if (h.sync_at < 0) return host_base(id) + h.last;
    const Time release = host_release_[i] = std::max(host_base(id) + h.pre, now_ + h.sync_at);
    return release + std::max(h.after, h.first_after + std::max<Time>(0, duration - h.sync_at));
  }
  // Whether the op, ready on an idle stream, has its first kernel issued by now; the time its stream
  // waits for the host from here is Timeline::host_wait_before.
  bool host_ready(OpId id) {
    const auto i = static_cast<size_t>(id);
    if (!host_issued(id)) {
      if (host_blocked_since_[i] < 0) host_blocked_since_[i] = now_;
      return false;
    }
    if (host_blocked_since_[i] >= 0) tl_.host_wait_before[i] = now_ - host_blocked_since_[i];
    return true;
  }
  // An op runs at least until the host has issued its last kernel (Timeline::host_wait_within): its
  // own work runs (and slows beside a collective) as usual, and if it ends before that issue time the
  // op holds its stream until then (hold_for_host). An op on a shared link is stretched instead.
  Time host_bound_duration(OpId id, Time duration) {
    const auto i = static_cast<size_t>(id);
    const Time issued = host_end(id, duration) - now_;
    if (issued <= duration) return duration;
    if (hot_[i].shared_link < 0) {
      host_deadline_[i] = now_ + issued;
      return duration;
    }
    tl_.host_wait_within[i] = issued - duration;
    return issued;
  }
  // The op's own work has ended before the host issued its last kernel: it waits for that, its work
  // no longer slowed by a collective.
  void hold_for_host(OpId id) {
    const auto i = static_cast<size_t>(id);
    tl_.host_wait_within[i] = host_deadline_[i] - now_;
    heap_.push({host_deadline_[i], seq_++, id, hot_[i].version});
    host_deadline_[i] = -1;
    const auto r = static_cast<size_t>(hot_[i].rank);
    if (slowed_op_[r] == id) slowed_op_[r] = -1;
  }
  // Whether the op's first kernel has been issued by now; if not, a wake-up at its issue time.
  bool host_issued(OpId id) {
    char& w = hot_[static_cast<size_t>(id)].host;
    if (w == kHostIssued) return true;
    const Time at = host_base(id) + p_.host[static_cast<size_t>(id)].first;
    if (at <= now_) {
      w = kHostIssued;
      return true;
    }
    if (w == kHostUnchecked) {
      w = kHostWaiting;
      heap_.push({at, seq_++, id, hot_[static_cast<size_t>(id)].version});
    }
    return false;
  }

  void finish(OpId id) {
    const HotOp& op = hot_[static_cast<size_t>(id)];
    if (op.shared_link >= 0) {
      share_update(op.rank);
      auto& act = sharing_[static_cast<size_t>(op.rank)];
      act.erase(std::find(act.begin(), act.end(), id));
      share_reschedule(op.rank);
    }
    tl_.end[static_cast<size_t>(id)] = now_;
    ++ended_;
    if (op.flags & kFused) fused_[static_cast<size_t>(op.rank)].op = -1;
    if (op.flags & kMemAtEnd) mem(op.rank, p_.ops[static_cast<size_t>(id)].at_end);
    const size_t q = op.queue;
    busy_[q] = 0;
    ++head_[q];
    if (op.flags & kCommStream) mark_dirty(op.rank);
    if (slowed_op_[static_cast<size_t>(op.rank)] == id) slowed_op_[static_cast<size_t>(op.rank)] = -1;
    for (std::int32_t k = succ_begin_[static_cast<size_t>(id)]; k < succ_begin_[static_cast<size_t>(id) + 1]; ++k) {
      const OpId s = succ_[static_cast<size_t>(k)];
      HotOp& h = hot_[static_cast<size_t>(s)];
      if (--h.remaining == 0) try_start(h.queue);
    }
    try_start(q);
  }

  // A fused op (Program::segments) runs its segments back to back, each timed as the op it stands
  // for: a segment outside the communication phases under the overlap slowdown stretches while
  // the rank's collective stream is busy, rounded per segment. One event at its end: the segments'
  // ends are planned at its start from the rate then, and planned again from the running segment
  // on whenever the rate changes (fused_retime), as the engine re-times a slowed op.
  struct Fused {
    OpId op = -1;     // the rank's running fused op
    char rate = 0;    // whether its segments now run slowed
    std::int32_t at = 0;  // its running segment (the first not known to have ended)
    Time last = 0;    // when that segment's work was last accounted (its start, or a change of rate)
    double work = 0;  // its standalone work left then, picoseconds
    bool planned = false;  // its segments' ends written to Timeline::seg_end
  };
  void fused_at(size_t i, const Op& op) {
    fused_time_[i] = fused_next_;
    fused_next_ += op.seg_count;
  }
  bool seg_slowable(const Segment& s) const { return slows_ && !phase_is_comm(s.phase); }
  // Plans the segments' ends from the running one on and schedules the op's end there.
  [[gnu::noinline]] void fused_plan(std::int32_t rank) {
    Fused& f = fused_[static_cast<size_t>(rank)];
    const Op& op = p_.ops[static_cast<size_t>(f.op)];
    Time* ends = tl_.seg_end.data() + fused_time_[static_cast<size_t>(f.op)];
    const Segment* seg = p_.segments.data() + op.seg_first;
    Time t = f.last;
    f.planned = true;
    for (std::int32_t i = f.at; i < op.seg_count; ++i) {
      const Time d = seg_slowable(seg[i]) ? scaled(i == f.at ? f.work : static_cast<double>(seg[i].duration), f.rate) : seg[i].duration;
      if (d > kMaxTime - t) past_range();
      t += d;
      ends[i] = t;
    }
    heap_.push({t, seq_++, f.op, ++hot_[static_cast<size_t>(f.op)].version});
  }
  [[gnu::noinline]] void fused_start(OpId id) {
    const HotOp& h = hot_[static_cast<size_t>(id)];
    Fused& f = fused_[static_cast<size_t>(h.rank)];
    const Op& op = p_.ops[static_cast<size_t>(id)];
    tl_.events += op.seg_count;
    f = {id, slows_ ? collective_running(h.rank) : char{0}, 0, now_, static_cast<double>(p_.segments[static_cast<size_t>(op.seg_first)].duration), false};
    if (f.rate) {
      fused_plan(h.rank);
      return;
    }
    // Unslowed: each segment takes its duration, the op their sum (kMaxTime where that passes the
    // range); Timeline::seg_end stays unset unless the rate changes before the op ends.
    if (op.duration >= kMaxTime - now_) past_range();
    heap_.push({now_ + op.duration, seq_++, id, ++hot_[static_cast<size_t>(id)].version});
  }
  // The rank's collective stream started or stopped under a fused op: the segments that have ended
  // by now are left as planned (one ending now counts as ended), the running one's work accounted
  // as retime_dirty accounts a slowed op's, and the rest planned at the new rate.
  [[gnu::noinline]] void fused_retime(std::int32_t rank, char slow) {
    Fused& f = fused_[static_cast<size_t>(rank)];
    const Op& op = p_.ops[static_cast<size_t>(f.op)];
    Time* ends = tl_.seg_end.data() + fused_time_[static_cast<size_t>(f.op)];
    const Segment* seg = p_.segments.data() + op.seg_first;
    if (!f.planned) {  // started unslowed and not re-timed since: each segment its duration from the start
      Time t = f.last;
      for (std::int32_t i = 0; i < op.seg_count; ++i) ends[i] = t += seg[i].duration;
      f.planned = true;
    }
    if (ends[op.seg_count - 1] <= now_) {
      f.rate = slow;  // its last segment ends now: the op ends as planned
      return;
    }
    while (ends[f.at] <= now_) {
      f.last = ends[f.at];
      ++f.at;
      f.work = static_cast<double>(seg[f.at].duration);
    }
    if (seg_slowable(seg[f.at])) {
      const double elapsed = static_cast<double>(now_ - f.last);
      f.work = std::max(0.0, f.work - (f.rate ? elapsed / (1.0 + o_.overlap_compute_slowdown) : elapsed));
      f.last = now_;
    }
    f.rate = slow;
    fused_plan(rank);
  }

  const Program& p_;
  const EngineOptions& o_;
  const bool has_host_;  // Program::host is given: ops wait for their kernels' issue
  std::vector<Time> host_blocked_since_;  // per op: when its stream was first ready for it but the host was not
  std::vector<Time> host_deadline_;       // per op: when the host issues its last kernel, where its work ends before (else -1)
  std::vector<Time> host_release_;        // per op with a sync inside it: when the GPU released the host there
  const bool slows_ = o_.overlap_compute_slowdown > 0.0;  // compute beside a collective runs slower
  const std::array<std::uint8_t, kStreams * kPhases> kind_flags_ = kind_flags();  // by stream and phase
  Timeline tl_;
  std::vector<std::int32_t> succ_begin_;
  std::vector<OpId> succ_;
  std::vector<HotOp> hot_;
  std::vector<std::int32_t> queue_begin_;  // stream queue q holds queue_ops_[queue_begin_[q], queue_begin_[q + 1])
  std::vector<OpId> queue_ops_;
  std::vector<std::int32_t> head_;         // per queue: the index in queue_ops_ of the next op
  std::vector<char> busy_;
  std::vector<size_t> arrived_;
  std::vector<std::array<Bytes, kMemCats>> cur_;
  std::vector<Bytes> total_;  // per rank, the sum of cur_
  std::vector<double> remaining_work_;             // standalone picoseconds left, shared-link ops (sized when any)
  std::vector<std::vector<OpId>> sharing_;         // active shared-link ops per rank
  std::vector<Time> share_last_;                   // per rank: when its sharing was last accounted
  // The compute op each rank runs under the overlap slowdown: its standalone work left (ps), when
  // that was last accounted and whether it then ran slowed.
  std::vector<OpId> slowed_op_;
  std::vector<double> slowed_work_;
  std::vector<Time> slowed_last_;
  std::vector<char> slowed_rate_;
  std::vector<char> dirty_;
  std::vector<std::int32_t> dirty_list_;
  std::vector<Fused> fused_;               // per rank (sized when the program has fused ops)
  std::vector<std::int32_t> fused_time_;   // per op: where its segments' ends start in Timeline::seg_end
  std::int32_t fused_next_ = 0;
  EventQueue heap_;
  std::int64_t seq_ = 0;
  size_t ended_ = 0;  // ops that have ended
  Time now_ = 0;
};

}  // namespace

Timeline run_program(const Program& program, const EngineOptions& options) { return Run(program, options).go(); }

}  // namespace parasim
