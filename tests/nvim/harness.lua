-- Test-only: loaded after a README Neovim config by tests/test_neovim.py. Once the first
-- diagnostics arrive it asks for a hover at PTXLS_HOVER_LINE:PTXLS_HOVER_COL (0-based), writes
-- both to PTXLS_NVIM_OUT and quits. Only APIs Neovim 0.7 already has are used here.
local out = assert(os.getenv("PTXLS_NVIM_OUT"), "PTXLS_NVIM_OUT is not set")
local hover_line = tonumber(os.getenv("PTXLS_HOVER_LINE") or "0")
local hover_col = tonumber(os.getenv("PTXLS_HOVER_COL") or "0")
local lines = {}
local asked = false

local function finish(extra)
  table.insert(lines, extra)
  vim.fn.writefile(lines, out)
  vim.cmd("qa!")
end

-- Hover contents come as MarkupContent, a MarkedString or a list of them.
local function hover_text(contents)
  if type(contents) == "string" then return contents end
  if contents.value then return contents.value end
  local parts = {}
  for _, c in ipairs(contents) do
    table.insert(parts, type(c) == "string" and c or c.value or "")
  end
  return table.concat(parts, "\n")
end

vim.api.nvim_create_autocmd("DiagnosticChanged", {
  callback = function()
    local diags = vim.diagnostic.get(0)
    if asked or #diags == 0 then return end
    asked = true
    for _, d in ipairs(diags) do
      table.insert(lines, string.format("diag:%d:%d:%s:%s", d.lnum + 1, d.col + 1, d.source or "", d.message))
    end
    table.insert(lines, "filetype:" .. vim.bo.filetype)
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(0) },
      position = { line = hover_line, character = hover_col },
    }
    vim.lsp.buf_request(0, "textDocument/hover", params, function(err, result)
      if err then return finish("hover-error:" .. vim.inspect(err):gsub("\n", " ")) end
      if not result or not result.contents then return finish("hover:") end
      finish("hover:" .. hover_text(result.contents):gsub("\n", " "))
    end)
  end,
})
