"""Seed 003's asyncio executor, pasted unchanged (shared/seeds/003: the tools, TOOL_REGISTRY,
execute_one_tool in its three versions, execute_tools_in_parallel in its two, the module-level
Semaphore(5), the metadata, group_tool_calls, execute_tool_batch, execute_with_retry and
create_idempotency_key), in the order the article gives them: later versions replace earlier ones,
as they would in a file built by following it.

Left out: the httpx variant of query_service_logs (an illustration; it needs httpx), the demos that
call `asyncio.run(main())` at import, handle_incident (it calls analyze_incident and friends, which
the article never defines) and run_agent (it needs a model client). Lint is off for this file: it is
the article's code, not ours.
"""
# ruff: noqa
# mypy: ignore-errors
# fmt: off

# seed 003: 先定义几个异步工具 (the tools)
import asyncio
from datetime import datetime


async def query_service_logs(
    service_name: str,
    minutes: int
) -> dict:
    await asyncio.sleep(3)

    return {
        "tool": "query_service_logs",
        "service": service_name,
        "minutes": minutes,
        "error_count": 236,
        "main_error": "Database connection pool exhausted"
    }


async def query_service_metrics(
    service_name: str,
    minutes: int
) -> dict:
    await asyncio.sleep(4)

    return {
        "tool": "query_service_metrics",
        "service": service_name,
        "cpu": "68%",
        "memory": "74%",
        "average_latency": "4.8s",
        "database_pool_usage": "100%"
    }


async def query_deployment_history(
    service_name: str
) -> dict:
    await asyncio.sleep(2)

    return {
        "tool": "query_deployment_history",
        "service": service_name,
        "last_deployment": "2026-07-24 09:30:00",
        "version": "order-service:2.7.1",
        "status": "success"
    }


# seed 003: 实现一个通用的并行工具执行器 (the registry)
TOOL_REGISTRY = {
    "query_service_logs": query_service_logs,
    "query_service_metrics": query_service_metrics,
    "query_deployment_history": query_deployment_history
}


# seed 003: 先封装单个工具的执行逻辑
async def execute_one_tool(tool_call: dict) -> dict:
    call_id = tool_call["id"]
    tool_name = tool_call["name"]
    arguments = tool_call["arguments"]

    tool = TOOL_REGISTRY.get(tool_name)

    if tool is None:
        return {
            "call_id": call_id,
            "tool": tool_name,
            "success": False,
            "error": "工具不存在"
        }

    try:
        result = await tool(**arguments)

        return {
            "call_id": call_id,
            "tool": tool_name,
            "success": True,
            "result": result
        }

    except Exception as error:
        return {
            "call_id": call_id,
            "tool": tool_name,
            "success": False,
            "error": str(error)
        }


# seed 003: 然后统一并行调度
async def execute_tools_in_parallel(
    tool_calls: list[dict]
) -> list[dict]:
    tasks = [
        asyncio.create_task(execute_one_tool(tool_call))
        for tool_call in tool_calls
    ]

    return await asyncio.gather(*tasks)


# seed 003: 一个工具失败，不应该拖垮全部任务 (return_exceptions=True)
async def execute_tools_in_parallel(
    tool_calls: list[dict]
) -> list[dict]:
    tasks = [
        asyncio.create_task(execute_one_tool(tool_call))
        for tool_call in tool_calls
    ]

    raw_results = await asyncio.gather(
        *tasks,
        return_exceptions=True
    )

    results = []

    for tool_call, raw_result in zip(tool_calls, raw_results):
        if isinstance(raw_result, Exception):
            results.append({
                "call_id": tool_call["id"],
                "tool": tool_call["name"],
                "success": False,
                "error": str(raw_result)
            })
        else:
            results.append(raw_result)

    return results


# seed 003: 给工具增加超时
async def execute_one_tool(
    tool_call: dict,
    timeout_seconds: int = 10
) -> dict:
    call_id = tool_call["id"]
    tool_name = tool_call["name"]
    arguments = tool_call["arguments"]

    tool = TOOL_REGISTRY.get(tool_name)

    if tool is None:
        return {
            "call_id": call_id,
            "tool": tool_name,
            "success": False,
            "error": "工具不存在"
        }

    try:
        result = await asyncio.wait_for(
            tool(**arguments),
            timeout=timeout_seconds
        )

        return {
            "call_id": call_id,
            "tool": tool_name,
            "success": True,
            "result": result
        }

    except asyncio.TimeoutError:
        return {
            "call_id": call_id,
            "tool": tool_name,
            "success": False,
            "error": f"工具执行超过{timeout_seconds}秒"
        }

    except Exception as error:
        return {
            "call_id": call_id,
            "tool": tool_name,
            "success": False,
            "error": str(error)
        }


# seed 003: 并行不等于无限并发 (the semaphore)
MAX_CONCURRENCY = 5
tool_semaphore = asyncio.Semaphore(MAX_CONCURRENCY)


async def execute_one_tool(
    tool_call: dict,
    timeout_seconds: int = 10
) -> dict:
    async with tool_semaphore:
        call_id = tool_call["id"]
        tool_name = tool_call["name"]
        arguments = tool_call["arguments"]

        tool = TOOL_REGISTRY.get(tool_name)

        if tool is None:
            return {
                "call_id": call_id,
                "tool": tool_name,
                "success": False,
                "error": "工具不存在"
            }

        try:
            result = await asyncio.wait_for(
                tool(**arguments),
                timeout=timeout_seconds
            )

            return {
                "call_id": call_id,
                "tool": tool_name,
                "success": True,
                "result": result
            }

        except asyncio.TimeoutError:
            return {
                "call_id": call_id,
                "tool": tool_name,
                "success": False,
                "error": f"工具执行超过{timeout_seconds}秒"
            }

        except Exception as error:
            return {
                "call_id": call_id,
                "tool": tool_name,
                "success": False,
                "error": str(error)
            }


# seed 003: 不要并行执行多个高风险写操作 (metadata)
TOOL_METADATA = {
    "query_service_logs": {
        "read_only": True,
        "parallel_safe": True
    },
    "query_service_metrics": {
        "read_only": True,
        "parallel_safe": True
    },
    "create_incident_ticket": {
        "read_only": False,
        "parallel_safe": False
    },
    "restart_production_service": {
        "read_only": False,
        "parallel_safe": False
    }
}


# seed 003: 调度前先分组
def group_tool_calls(tool_calls: list[dict]):
    parallel_calls = []
    sequential_calls = []

    for tool_call in tool_calls:
        metadata = TOOL_METADATA.get(
            tool_call["name"],
            {
                "read_only": False,
                "parallel_safe": False
            }
        )

        if metadata["parallel_safe"]:
            parallel_calls.append(tool_call)
        else:
            sequential_calls.append(tool_call)

    return parallel_calls, sequential_calls


# seed 003: 安全工具并行执行，高风险工具按顺序处理
async def execute_tool_batch(tool_calls: list[dict]):
    parallel_calls, sequential_calls = group_tool_calls(
        tool_calls
    )

    results = []

    if parallel_calls:
        parallel_results = await execute_tools_in_parallel(
            parallel_calls
        )
        results.extend(parallel_results)

    for tool_call in sequential_calls:
        result = await execute_one_tool(tool_call)
        results.append(result)

    return results


# seed 003: 重试不能随便加 (metadata)
TOOL_METADATA = {
    "query_service_logs": {
        "parallel_safe": True,
        "retryable": True
    },
    "create_incident_ticket": {
        "parallel_safe": False,
        "retryable": False
    }
}


# seed 003: 对查询类工具实现简单重试
async def execute_with_retry(
    tool,
    arguments: dict,
    max_attempts: int = 3
):
    last_error = None

    for attempt in range(1, max_attempts + 1):
        try:
            return await tool(**arguments)

        except Exception as error:
            last_error = error

            if attempt < max_attempts:
                await asyncio.sleep(2 ** (attempt - 1))

    raise last_error


# seed 003: 幂等键
import hashlib
import json


def create_idempotency_key(
    task_id: str,
    tool_name: str,
    arguments: dict
) -> str:
    raw = json.dumps(
        {
            "task_id": task_id,
            "tool": tool_name,
            "arguments": arguments
        },
        sort_keys=True,
        ensure_ascii=False
    )

    return hashlib.sha256(raw.encode("utf-8")).hexdigest()
