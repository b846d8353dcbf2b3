# cmake -DSPV=in.spv -DOUT=out.spv -DDIS=spirv-dis -DAS=spirv-as -P SpirvDeviceScope.cmake
# Declares OpCapability VulkanMemoryModelDeviceScope in a module built with the
# Vulkan memory model. glslang 12 (Debian 12) gives plain atomics Device scope
# under the memory model without declaring the capability that scope needs, so
# spirv-val refuses the module; the capability is the only change (ids kept).
execute_process(COMMAND ${DIS} --raw-id ${SPV} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "spirv-dis failed on ${SPV}")
endif()
if(NOT text MATCHES "OpCapability VulkanMemoryModelDeviceScope")
  string(REPLACE "OpCapability VulkanMemoryModel\n"
                 "OpCapability VulkanMemoryModel\nOpCapability VulkanMemoryModelDeviceScope\n" text "${text}")
endif()
file(WRITE ${OUT}.spvasm "${text}")
execute_process(COMMAND ${AS} --preserve-numeric-ids --target-env vulkan1.1 -o ${OUT} ${OUT}.spvasm RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "spirv-as failed on ${OUT}.spvasm")
endif()
