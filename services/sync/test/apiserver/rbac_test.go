package apiserver_test

import (
	"context"
	"os"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// rbacManifest is the DaemonSet's RBAC, applied as it ships.
const rbacManifest = "../../../../deploy/daemonset/rbac.yaml"

// bindDeployRBAC creates or updates the ClusterRole and Role of
// deploy/daemonset/rbac.yaml and binds them to user, in place of the
// manifest's service account.
func bindDeployRBAC(t *testing.T, client kubernetes.Interface, user string) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(rbacManifest)
	if err != nil {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				t.Fatal(err)
			}
			roles := client.RbacV1().ClusterRoles()
			if _, err := roles.Create(ctx, &r, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
				cur, err := roles.Get(ctx, r.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cur.Rules = r.Rules
				if _, err := roles.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			b := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: r.Name + "-test"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name},
				Subjects:   subjects,
			}
			if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				t.Fatal(err)
			}
			roles := client.RbacV1().Roles(r.Namespace)
			if _, err := roles.Create(ctx, &r, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
				cur, err := roles.Get(ctx, r.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cur.Rules = r.Rules
				if _, err := roles.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			b := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: r.Name + "-test", Namespace: r.Namespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
				Subjects:   subjects,
			}
			if _, err := client.RbacV1().RoleBindings(r.Namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
}
