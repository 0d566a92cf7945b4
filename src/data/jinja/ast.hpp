// The parsed template: expression and statement nodes, each with the line it came from (what
// evaluation errors name). Built by parser.cpp, walked by evaluator.cpp; immutable after parsing.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "value.hpp"

namespace trident::data::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // args
    kTuple,      // args
    kDict,       // args: key, value, key, value, ...
    kAttribute,  // args[0].name
    kItem,       // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]] (null parts absent)
    kCall,       // args[0](args[1:], kwargs)
    kFilter,     // name(args[0], args[1:], kwargs)
    kTest,       // args[0] is [not] name(args[1:], kwargs); negated
    kNot,        // not args[0]
    kNegate,     // -args[0]
    kPlus,       // +args[0]
    kBinary,     // args[0] op args[1]: + - * / // % ** ~
    kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
    kAnd,        // args[0] and args[1]
    kOr,         // args[0] or args[1]
    kCondition,  // args[0] if args[1] else args[2] (args[2] null: undefined)
  };
  Kind kind;
  int line = 0;
  Value value;                       // kLiteral
  std::string name;                  // kName, kAttribute, kFilter, kTest; kBinary: the operator
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // kCall, kFilter, kTest
  std::vector<std::string> ops;      // kCompare
  bool negated = false;              // kTest
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// {% set x = v %}, {% set a, b = v %}, {% set ns.attr = v %}: the names to bind, or one
// namespace attribute.
struct Target {
  std::vector<std::string> names;
  std::string attribute;  // non-empty: names[0].attribute
};

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches: (condition or null for else, body)
    kFor,       // for target in expr [if condition] body [else else_body]
    kSet,       // set target = expr
    kSetBlock,  // set target [| filters] body endset (filters: kFilter exprs on a null operand)
    kFilterBlock,  // filter f body endfilter
    kBreak,
    kContinue,
    kMacro,     // macro name(params) body
    kScope,     // with / generation: body in a scope of its own (assignments: with's)
  };
  Kind kind;
  int line = 0;
  std::string text;  // kText; kMacro: the name
  ExprPtr expr;      // kOutput, kFor (iterable), kSet (value)
  ExprPtr condition; // kFor: the loop filter
  Target target;     // kFor, kSet, kSetBlock
  std::vector<std::pair<ExprPtr, Body>> branches;  // kIf
  Body body;
  Body else_body;    // kFor
  std::vector<ExprPtr> filters;  // kSetBlock, kFilterBlock: applied to the rendered body in order
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro (null default: required); kScope: with's assignments
};

}  // namespace trident::data::jinja
