// A validator for the subset of JSON Schema (draft 2020-12) that
// docs/bench-schema.json uses: type (one or a list), enum, const, required,
// properties, items, minimum, $ref to "#/$defs/...", anyOf, if/then/else.
// Any other keyword in the schema is reported as an error, so the schema cannot
// silently grow past what the tests check.
#pragma once

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace sieve_test {

class SchemaValidator {
public:
    explicit SchemaValidator(nlohmann::json root) : root_(std::move(root)) {}

    // Errors as "path: what"; empty when `doc` conforms.
    std::vector<std::string> validate(const nlohmann::json& doc) const {
        std::vector<std::string> errors;
        check(root_, doc, "$", errors);
        return errors;
    }

private:
    nlohmann::json root_;

    static bool has_type(const nlohmann::json& v, const std::string& t) {
        if (t == "object") return v.is_object();
        if (t == "array") return v.is_array();
        if (t == "string") return v.is_string();
        if (t == "boolean") return v.is_boolean();
        if (t == "null") return v.is_null();
        if (t == "number") return v.is_number();
        if (t == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<long long>(v.get<double>())));
        return false;
    }

    const nlohmann::json& resolve(const std::string& ref) const {
        const std::string prefix = "#/$defs/";
        if (ref.rfind(prefix, 0) != 0) throw std::runtime_error("unsupported $ref " + ref);
        return root_.at("$defs").at(ref.substr(prefix.size()));
    }

    void check(const nlohmann::json& s, const nlohmann::json& v, const std::string& path, std::vector<std::string>& errors) const {
        static const std::set<std::string> known = {"$schema", "$id", "title", "description", "type", "enum", "const",
                                                    "required", "properties", "items", "minimum", "$ref", "$defs",
                                                    "anyOf", "if", "then", "else"};
        for (auto it = s.begin(); it != s.end(); ++it)
            if (!known.count(it.key())) errors.push_back(path + ": schema keyword '" + it.key() + "' not supported by the validator");
        if (s.contains("$ref")) check(resolve(s["$ref"].get<std::string>()), v, path, errors);
        if (s.contains("type")) {
            bool ok = false;
            if (s["type"].is_string()) ok = has_type(v, s["type"].get<std::string>());
            else
                for (const auto& t : s["type"]) ok = ok || has_type(v, t.get<std::string>());
            if (!ok) {
                errors.push_back(path + ": expected type " + s["type"].dump() + ", got " + v.dump().substr(0, 80));
                return;
            }
        }
        if (s.contains("enum")) {
            bool ok = false;
            for (const auto& e : s["enum"]) ok = ok || e == v;
            if (!ok) errors.push_back(path + ": " + v.dump() + " not in " + s["enum"].dump());
        }
        if (s.contains("const") && s["const"] != v) errors.push_back(path + ": expected " + s["const"].dump());
        if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>())
            errors.push_back(path + ": " + v.dump() + " below minimum " + s["minimum"].dump());
        if (s.contains("required") && v.is_object())
            for (const auto& r : s["required"])
                if (!v.contains(r.get<std::string>())) errors.push_back(path + ": missing required '" + r.get<std::string>() + "'");
        if (s.contains("properties") && v.is_object())
            for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it)
                if (v.contains(it.key())) check(it.value(), v[it.key()], path + "." + it.key(), errors);
        if (s.contains("items") && v.is_array())
            for (size_t i = 0; i < v.size(); ++i) check(s["items"], v[i], path + "[" + std::to_string(i) + "]", errors);
        if (s.contains("anyOf")) {
            bool ok = false;
            for (const auto& alt : s["anyOf"]) {
                std::vector<std::string> sub;
                check(alt, v, path, sub);
                ok = ok || sub.empty();
            }
            if (!ok) errors.push_back(path + ": matches none of anyOf");
        }
        if (s.contains("if")) {
            std::vector<std::string> sub;
            check(s["if"], v, path, sub);
            if (sub.empty() && s.contains("then")) check(s["then"], v, path, errors);
            if (!sub.empty() && s.contains("else")) check(s["else"], v, path, errors);
        }
    }
};

} // namespace sieve_test
