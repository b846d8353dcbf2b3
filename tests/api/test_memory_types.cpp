// Where each buffer lives (choose_memory_type, vk_device.hpp), on the memory
// layouts real devices report: a buffer the host reads never lands in a
// discrete GPU's BAR (host loads there are uncached PCIe round trips), one the
// host writes and the GPU reads does, and a UMA device's one all-purpose type
// serves both.
#include "vulkan/vk_device.hpp"

#include <gtest/gtest.h>

#include <initializer_list>

namespace {

using sieve::HostAccess;

constexpr VkMemoryPropertyFlags kLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
constexpr VkMemoryPropertyFlags kVisible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags kCached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

VkPhysicalDeviceMemoryProperties layout(std::initializer_list<VkMemoryPropertyFlags> types) {
    VkPhysicalDeviceMemoryProperties m{};
    for (VkMemoryPropertyFlags f : types) m.memoryTypes[m.memoryTypeCount++].propertyFlags = f;
    return m;
}

constexpr uint32_t kAll = 0xFFFFFFFFu;

TEST(MemoryTypes, DiscreteGpuWithResizableBar) {
    // NVIDIA's order: VRAM, system memory (uncached, cached), VRAM through the BAR.
    const auto m = layout({kLocal, kVisible, kVisible | kCached, kLocal | kVisible});
    EXPECT_EQ(sieve::choose_memory_type(m, kAll, HostAccess::None), 0u);
    EXPECT_EQ(sieve::choose_memory_type(m, kAll, HostAccess::Writes), 3u);
    EXPECT_EQ(sieve::choose_memory_type(m, kAll, HostAccess::Reads), 2u);
    // The buffer's allowed types decide among what is left.
    EXPECT_EQ(sieve::choose_memory_type(m, 0b1011u, HostAccess::Reads), 1u) << "uncached system memory before the BAR";
    EXPECT_EQ(sieve::choose_memory_type(m, 0b1001u, HostAccess::Reads), 3u) << "the BAR when nothing else is allowed";
    EXPECT_EQ(sieve::choose_memory_type(m, 0b0110u, HostAccess::Writes), 1u);
    EXPECT_EQ(sieve::choose_memory_type(m, 0b0110u, HostAccess::None), UINT32_MAX);
}

TEST(MemoryTypes, DiscreteGpuWithoutHostVisibleDeviceMemory) {
    const auto m = layout({kLocal, kVisible | kCached, kVisible});
    EXPECT_EQ(sieve::choose_memory_type(m, kAll, HostAccess::Writes), 1u);
    EXPECT_EQ(sieve::choose_memory_type(m, kAll, HostAccess::Reads), 1u);
}

TEST(MemoryTypes, UnifiedMemoryDevices) {
    // lavapipe: one type with every property.
    const auto cpu = layout({kLocal | kVisible | kCached});
    for (HostAccess a : {HostAccess::None, HostAccess::Writes, HostAccess::Reads})
        EXPECT_EQ(sieve::choose_memory_type(cpu, kAll, a), 0u);
    // A phone GPU: device-local memory the host sees uncached and cached.
    const auto phone = layout({kLocal, kLocal | kVisible, kLocal | kVisible | kCached});
    EXPECT_EQ(sieve::choose_memory_type(phone, kAll, HostAccess::Writes), 1u);
    EXPECT_EQ(sieve::choose_memory_type(phone, kAll, HostAccess::Reads), 2u);
}

TEST(MemoryTypes, HostAccessNeedsCoherentMemory) {
    // Sieve never flushes or invalidates: a visible type without coherence is never taken.
    const auto m = layout({kLocal, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | kCached});
    EXPECT_EQ(sieve::choose_memory_type(m, kAll, HostAccess::Reads), UINT32_MAX);
    EXPECT_EQ(sieve::choose_memory_type(m, kAll, HostAccess::Writes), UINT32_MAX);
}

} // namespace
