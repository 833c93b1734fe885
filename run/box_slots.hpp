// run/box_slots.hpp — a state dir's boxes counted against its max_boxes.
//
// Each live box (a run, a session, a run's MCP server box) holds one slot
// for its whole life: STATE/slots/N.lock, flock(LOCK_EX) by the process that
// supervises the box, the holder's line ("ID KIND") in the file. The kernel
// drops the flock when that process dies, so a crashed supervisor's slot is
// free again with nothing to clean up. Counting and taking happen under
// STATE/slots/.lock (a bounded wait), so two starts cannot both take the
// last slot. A limit lowered below the live count refuses new boxes until
// enough have ended; nothing running is touched. docs/operations.md "Capacity".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/fd.hpp"

namespace corral::run {

// The slot a box holds: released when this is destroyed (or the process dies).
class BoxSlot {
public:
    BoxSlot() = default;
    BoxSlot(Fd fd, unsigned index) : fd_(std::move(fd)), index_(index) {}
    bool held() const { return fd_.valid(); }
    unsigned index() const { return index_; }
    // The slot file's fd: take_box_slot flocks it and writes the holder's line through it.
    int fd() const { return fd_.get(); }

private:
    Fd fd_;
    unsigned index_ = 0;
};

struct SlotHolder {
    unsigned index = 0;
    std::string line;  // "ID KIND" as the holder wrote it
};

// The live holders of `state_dir`'s slots, by index.
std::vector<SlotHolder> live_slot_holders(const std::string& state_dir);

struct SlotRequest {
    std::string state_dir;
    std::uint64_t max_boxes = 0;
    std::string holder;  // "ID KIND", e.g. "20261206T...-abc123 run"
    // How long to wait for a slot when all are taken (--wait); zero: refuse at once.
    std::chrono::milliseconds wait{0};
    // Told once, when it starts to wait: how long and for what.
    std::function<void(const std::string&)> waiting;
};

// A slot of the state dir, or UsageError: "capacity: all N boxes of STATE
// are running (...), ..." naming up to five holders, the limit's file and
// --wait (or how long it waited). Throws SysError for a failed call.
BoxSlot take_box_slot(const SlotRequest& request);

}  // namespace corral::run
